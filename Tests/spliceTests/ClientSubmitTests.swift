import Foundation
import SpliceJSON
import SpliceMedia
import SpliceWire
import Testing

@testable import splice

/// `splice submit` without a coordinator: what it would send, and what it refuses to send.
@Suite("Client submit")
struct ClientSubmitTests {
    @Test("relative paths are made absolute against the working directory")
    func absolutePaths() throws {
        let here = FileManager.default.currentDirectoryPath
        let command = try parse(["media/../in.mov", "./out/clip.mp4"], as: SubmitCommand.self)
        let submission = try command.submission()
        #expect(submission.input == here + "/in.mov")
        #expect(submission.output == here + "/out/clip.mp4")
        let absolute = try parse(["/srv/in.mov", "/srv/out.mp4"], as: SubmitCommand.self).submission()
        #expect(absolute.input == "/srv/in.mov" && absolute.output == "/srv/out.mp4")
    }

    @Test("one submission key per invocation, the same in every SUBMIT it sends")
    func submissionKey() throws {
        let command = try parse(["/in.mov", "/out.mp4"], as: SubmitCommand.self)
        let first = try command.submission()
        let again = try command.submission()
        #expect(first.submissionKey != nil)
        #expect(first.submissionKey == again.submissionKey)
        let other = try parse(["/in.mov", "/out.mp4"], as: SubmitCommand.self).submission()
        #expect(other.submissionKey != first.submissionKey)
    }

    @Test("the export flags become the TranscodeRequest the coordinator decodes, in exact time")
    func jobRequest() throws {
        let command = try parse([
            "/in.mov", "/out.mp4", "--crf", "20", "--width", "640", "--preset", "veryfast", "--no-audio",
            "--segment-seconds", "4.5", "--start", "1", "--duration", "00:00:05.5", "--faststart",
            "--metadata", "title=Holiday", "--priority", "7",
        ], as: SubmitCommand.self)
        let submission = try command.submission()
        #expect(submission.priority == 7)
        let request = try submission.export.decode(TranscodeRequest.self)
        #expect(request.fileType == .mp4)
        #expect(request.video?.codec == .h264)
        #expect(request.video?.quality == 20)
        #expect(request.video?.width == 640)
        #expect(request.video?.preset == "veryfast")
        #expect(request.audio == nil)
        #expect(request.segmentDuration == MediaTime(parsing: "4.5"))
        #expect(request.range == MediaTimeRange(start: MediaTime(seconds: 1), duration: MediaTime(parsing: "5.5")!))
        #expect(request.optimizesForNetworkUse)
        #expect(request.metadata == ["title": "Holiday"])
        #expect(try parse(["/in.mov", "/out.webm"], as: SubmitCommand.self).request.video?.codec == .vp9)
        #expect(try parse(["/in.mov", "/out.mp4"], as: SubmitCommand.self).submission().priority == nil)
    }

    @Test("one set of defaults: a SUBMIT leaving a field out gets what `splice submit` sends without its flag",
          arguments: ["/out.mp4", "/out.webm", "/out.mov", "/out.mkv"])
    func defaults(output: String) throws {
        let cli = try parse(["/in.mov", output], as: SubmitCommand.self).request
        let fileType = try #require(OutputFileType(pathExtension: String(output.split(separator: ".").last!)))
        // The least an integrator's client can send: the container.
        let api = try JSON.decode(TranscodeRequest.self, from: Array(#"{"fileType": "\#(fileType.rawValue)"}"#.utf8))
        #expect(api == cli)
        #expect(api.audio != nil && api.audioTracks == .all, "every audio track, encoded")
        #expect(api.video != nil)
        // Leaving audio or video out is said, not implied.
        let noAudio = try parse(["/in.mov", output, "--no-audio"], as: SubmitCommand.self).request
        #expect(try JSON.decode(TranscodeRequest.self,
                                from: Array(#"{"fileType": "\#(fileType.rawValue)", "audioTracks": "none"}"#.utf8)) == noAudio)
        let noVideo = try parse(["/in.mov", output, "--no-video"], as: SubmitCommand.self).request
        #expect(try JSON.decode(TranscodeRequest.self,
                                from: Array(#"{"fileType": "\#(fileType.rawValue)", "includesVideo": false}"#.utf8)) == noVideo)
        // What the CLI sends decodes to what it meant, whatever it leaves out.
        for request in [cli, noAudio, noVideo] {
            #expect(try JSONPayload(encoding: request).decode(TranscodeRequest.self) == request)
        }
    }

    @Test("every export flag names the request field it sets, for the API's errors")
    func requestFieldOfEveryFlag() {
        // The coordinator names a refused setting by its field (`export.video.quality`); a flag
        // the table does not know would be named by its CLI spelling there.
        for flag in ExportOptions.flags {
            let name = flag.declaration.spec.name
            let key = SettingsError(field: name, value: "x", allowed: "y").requestKey
            #expect(key != name || !name.contains("-"), "--\(name) has no request field")
            let root = key.split(separator: ".").first.map(String.init) ?? key
            #expect(TranscodeRequestFields.names.contains(root), "--\(name) → \(key), not a TranscodeRequest field")
        }
        #expect(SettingsError(field: "crf", value: "60", allowed: "from 0 to 51 for h264").message(under: "export")
            == "invalid `export.video.quality` '60': must be from 0 to 51 for h264")
    }

    @Test("bad flags are usage errors naming the flag, found before any connection", arguments: [
        (["--crf", "99"], "--crf: '99' is not valid"),
        (["--priority", "5000"], "--priority must be from -1000 to 1000"),
        (["--segment-seconds", "0.5"], "--segment-seconds: '0.5s' is not valid; it must be at least 1 second"),
        (["--copy-video", "--copy-audio"], "--copy-video needs audio to encode"),
        (["--subtitles", "some"], "--subtitles: 'some' is not one of copy, none"),
        (["--no-audio", "--no-video"], "--no-audio with --no-video leaves nothing to export"),
        (["--secret-key", "c.key"], "--secret-key (or SPLICE_CLIENT_SECRET_KEY) needs --server-key"),
        (["--coordinator", "127.0.0.1:7451"], "--coordinator: '127.0.0.1:7451' is not an endpoint"),
    ])
    func refusals(words: [String], message: String) async {
        // A coordinator address nobody listens on: were anything sent, the error would differ.
        let result = await runCLI(["submit", "in.mov", "out.mp4"] + words + ["--timeout", "0.2"],
                                  root: SpliceCommand.self)
        #expect(result.code == .usage)
        #expect(result.stderr.hasPrefix("splice submit: " + message), "got: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("paths the cluster cannot use are refused")
    func paths() {
        // An input URL goes to the coordinator as given (its --source-protocols decide); an output URL cannot be written.
        #expect(usageError(["http://cdn/in.mp4", "out.mp4"], for: SubmitCommand.self) == nil)
        #expect(SubmitCommand.sourceLocation("https://cdn/in.mp4") == "https://cdn/in.mp4")
        #expect(SubmitCommand.sourceLocation("concat:a.mp4|b.mp4") == "concat:a.mp4|b.mp4")
        #expect(SubmitCommand.sourceLocation("/media/in.mp4") == "/media/in.mp4")
        #expect(usageError(["in.mp4", "https://cdn/out.mp4"], for: SubmitCommand.self)?
            .hasPrefix("<output>: 'https://cdn/out.mp4' is a URL") == true)
        #expect(usageError(["clip.mp4", "./clip.mp4"], for: SubmitCommand.self)?
            .hasPrefix("<output> is the same file as <input>") == true)
        #expect(usageError(["clip.mov", "clip.avi"], for: SubmitCommand.self)?
            .hasPrefix("cannot tell the container of 'clip.avi'") == true)
    }
}

/// The request's top-level fields, as it encodes them (a request with no video adds `includesVideo`).
enum TranscodeRequestFields {
    static let names: Set<String> = {
        var names = Set(Mirror(reflecting: TranscodeRequest(video: nil, audio: nil, fileType: .mp4)).children.compactMap(\.label))
        names.insert("includesVideo")
        return names
    }()
}
