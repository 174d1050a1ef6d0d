import Foundation
import SpliceJSON
import SpliceMedia
import SpliceTestSupport
import Testing

// The published JSON Schema of SUBMIT's `export` (docs/schema/transcode-request.json) held against
// the type: requests as the coordinator reads them are valid under it (Python's `jsonschema` is
// the judge), and it describes exactly the fields the type has, so a field added to the type
// without being documented fails here.

@Suite("The export settings' JSON Schema", .timeLimit(.minutes(2)))
struct ExportSchemaTests {
    static let schemaFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "docs/schema/transcode-request.json")

    /// A request with every field set, down to the settings, rungs and annotations inside it.
    static let everything = TranscodeRequest(
        video: VideoSettings(codec: .h264, width: 1280, height: 720, quality: 20, bitrate: 3_000_000,
                             maxBitrate: 4_000_000, bufferSize: 8_000_000, profile: "high", level: "4.1", preset: "slow",
                             keyframeInterval: 120, frameRate: Rational(30000, 1001), pixelFormat: "yuv420p", toneMap: true,
                             squarePixels: true, encoder: "libx264"),
        audio: AudioSettings(codec: .aac, sampleRate: 48_000, channels: 2, channelLayout: "stereo", bitrate: 128_000),
        fileType: .mp4, range: MediaTimeRange(start: MediaTime(value: 3, timescale: 2), duration: MediaTime(seconds: 60)),
        optimizesForNetworkUse: true, metadata: ["title": "Holiday", "comment": "ünïcode"],
        segmentDuration: MediaTime(value: 9, timescale: 2), overwrite: true, audioTracks: .tracks([1, 3]),
        copiesVideo: true, copiesAudio: true, subtitles: .none, dataTracks: .none,
        annotations: [TimedAnnotation(time: MediaTime(value: 1, timescale: 3), duration: MediaTime(seconds: 2), value: "intro")],
        audioSegmentDuration: MediaTime(seconds: 90),
        package: PackageRequest(ladder: [LadderRung(width: 1280, height: 720, bitrate: 3_000_000)],
                                segmentDuration: MediaTime(seconds: 6), hls: true, dash: true),
        quality: QualityRequest(verify: .warn, thresholds: QualityThresholds(minPSNR: 35), target: QualityTarget(metric: .ssim, value: 0.98),
                                minCRF: 12, maxCRF: 40, tolerance: 0.003, reportPath: "/out/report.html"))

    /// Requests as clients send them: the CLI's kinds, and no video at all (`includesVideo`).
    static let requests: [TranscodeRequest] = [
        everything,
        TranscodeRequest(video: VideoSettings(codec: .vp9), audio: AudioSettings(codec: .opus), fileType: .webm),
        TranscodeRequest(video: nil, audio: AudioSettings(codec: .pcm), fileType: .mov, audioTracks: .languages(["eng"])),
        TranscodeRequest(video: VideoSettings(codec: .hevc), audio: nil, fileType: .mkv),
    ]

    /// The stored properties of `value` (its Codable fields, as their names are the coding keys).
    static func fields(of value: Any) -> [String: Any] {
        Dictionary(uniqueKeysWithValues: Mirror(reflecting: value).children.compactMap { child in
            child.label.map { ($0, child.value) }
        })
    }

    static func isNil(_ value: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }

    /// The schema object `node` stands for (`$ref`s to `#/$defs/…` followed).
    static func resolve(_ node: JSONValue, in schema: JSONValue) throws -> [String: JSONValue] {
        guard case .object(var object) = node else { throw TestFailure("a schema node is not an object") }
        while case .string(let reference)? = object["$ref"] {
            guard reference.hasPrefix("#/$defs/"), case .object(let defs)? = (try resolveRoot(schema))["$defs"],
                  case .object(let target)? = defs[String(reference.dropFirst("#/$defs/".count))] else {
                throw TestFailure("unresolved \(reference)")
            }
            object = target
        }
        return object
    }

    static func resolveRoot(_ schema: JSONValue) throws -> [String: JSONValue] {
        guard case .object(let root) = schema else { throw TestFailure("the schema is not an object") }
        return root
    }

    /// The field names the schema gives the object `node` describes.
    static func properties(_ node: JSONValue, in schema: JSONValue) throws -> [String: JSONValue] {
        guard case .object(let properties)? = try resolve(node, in: schema)["properties"] else {
            throw TestFailure("no properties")
        }
        return properties
    }

    @Test("every field is set in the test's request, so the checks below see them all")
    func everythingIsSet() {
        var unset: [String] = []
        func check(_ value: Any, path: String) {
            for (name, field) in Self.fields(of: value) {
                if Self.isNil(field) { unset.append(path + name) }
            }
        }
        check(Self.everything, path: "")
        check(Self.everything.video!, path: "video.")
        check(Self.everything.audio!, path: "audio.")
        check(Self.everything.package!, path: "package.")
        check(Self.everything.package!.ladder![0], path: "package.ladder[0].")
        check(Self.everything.quality!, path: "quality.")
        check(Self.everything.quality!.thresholds, path: "quality.thresholds.")
        check(Self.everything.quality!.target!, path: "quality.target.")
        #expect(unset.isEmpty, "left unset: \(unset)")
    }

    @Test("the schema names exactly the fields of the type and of each type inside it")
    func fieldsMatch() throws {
        let schema = try JSONValue(parsing: Data(contentsOf: Self.schemaFile))
        let root = JSONValue.object(try Self.resolveRoot(schema))
        let request = Self.everything
        // `includesVideo` is the one field that is not stored: false exactly when there is no video.
        #expect(Set(try Self.properties(root, in: schema).keys)
            == Set(Self.fields(of: request).keys).union(["includesVideo"]))
        let top = try Self.properties(root, in: schema)
        let nested: [(String, Any, JSONValue?)] = [
            ("video", request.video!, top["video"]), ("audio", request.audio!, top["audio"]),
            ("range", request.range!, top["range"]), ("segmentDuration", request.segmentDuration!, top["segmentDuration"]),
            ("package", request.package!, top["package"]),
            ("quality", request.quality!, top["quality"]),
            ("quality.thresholds", request.quality!.thresholds, try Self.properties(top["quality"]!, in: schema)["thresholds"]),
            ("quality.target", request.quality!.target!, try Self.properties(top["quality"]!, in: schema)["target"]),
            ("video.frameRate", request.video!.frameRate!, try Self.properties(top["video"]!, in: schema)["frameRate"]),
            ("annotations[0]", request.annotations[0], try Self.resolve(top["annotations"]!, in: schema)["items"]),
        ]
        for (path, value, node) in nested {
            let node = try #require(node, "\(path) is not in the schema")
            #expect(Set(try Self.properties(node, in: schema).keys) == Set(Self.fields(of: value).keys), "\(path)")
        }
        let package = try Self.properties(top["package"]!, in: schema)
        let rung = try #require(try Self.resolve(package["ladder"]!, in: schema)["items"])
        #expect(Set(try Self.properties(rung, in: schema).keys) == Set(Self.fields(of: request.package!.ladder![0]).keys))
        // And what the encoder writes is what the type has.
        guard case .object(let encoded) = try JSONValue(encoding: request) else { throw TestFailure("not an object") }
        #expect(Set(encoded.keys) == Set(Self.fields(of: request).keys))
        guard case .object(let noVideo) = try JSONValue(encoding: Self.requests[2]) else { throw TestFailure("not an object") }
        #expect(noVideo["includesVideo"] == .bool(false))
    }

    @Test("requests as the coordinator reads them are valid under the schema (Python's jsonschema)")
    func validates() async throws {
        let folder = Fixtures.temporaryDirectory("schema")
        var files: [String] = []
        for (index, request) in Self.requests.enumerated() {
            let file = folder.appendingPathComponent("request-\(index).json")
            try Data(try JSON.encode(request)).write(to: file)
            files.append(file.path)
        }
        // The least a client may send, and two a client may get wrong.
        let minimal = folder.appendingPathComponent("minimal.json")
        try Data(#"{"fileType": "mp4"}"#.utf8).write(to: minimal)
        let misspelt = folder.appendingPathComponent("misspelt.json")
        try Data(#"{"fileType": "mp4", "segmentDurations": {"value": 4, "timescale": 1}}"#.utf8).write(to: misspelt)
        let noType = folder.appendingPathComponent("no-type.json")
        try Data(#"{"video": {"codec": "h264"}}"#.utf8).write(to: noType)
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for path in sys.argv[2:]:
                errors = sorted(e.message for e in validator.iter_errors(json.load(open(path))))
                print(json.dumps({"file": path.rsplit("/", 1)[-1], "errors": errors}))
            """
        let result = try await ExternalTool.run("python3", ["-c", script, Self.schemaFile.path] + files
                                                + [minimal.path, misspelt.path, noType.path])
        #expect(result.status == 0, "python3: \(result.stderr)")
        var errors: [String: [String]] = [:]
        for line in result.text.split(separator: "\n") {
            guard case .object(let entry) = try JSONValue(parsing: Array(line.utf8)),
                  case .string(let file)? = entry["file"], case .array(let list)? = entry["errors"] else { continue }
            errors[file] = list.compactMap { if case .string(let text) = $0 { text } else { nil } }
        }
        for index in Self.requests.indices {
            #expect(errors["request-\(index).json"] == [], "request \(index): \(errors["request-\(index).json"] ?? ["not checked"])")
        }
        #expect(errors["minimal.json"] == [])
        #expect(errors["misspelt.json"]?.first?.contains("segmentDurations") == true, "\(errors["misspelt.json"] ?? [])")
        #expect(errors["no-type.json"]?.first?.contains("fileType") == true, "\(errors["no-type.json"] ?? [])")
        // Each of those decodes as the coordinator reads it (the schema promises nothing the type refuses).
        for file in files + [minimal.path] {
            _ = try JSON.decode(TranscodeRequest.self, from: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        }
    }
}
