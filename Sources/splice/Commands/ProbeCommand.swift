import Foundation
import SpliceMedia

/// `splice probe INPUT [--json]`: what a file holds, and where its video keyframes are.
struct ProbeCommand: Command {
    static let input = Positional<String>("input", help: "A media file or URL, or an object: s3://BUCKET/KEY.") { $0 }
    static let json = Flag("json", help: "Print JSON for scripts instead of text.")

    static let configuration = CommandConfiguration(
        name: "probe", abstract: "Show the tracks and keyframe times of a media file.",
        discussion: "Times are asset times: measured from the earliest audio or video start, exact (value/timescale).",
        arguments: [input, json], environment: [.ffmpegLog, .objectStorage])

    let input: String
    let json: Bool

    init(_ arguments: ParsedArguments) throws {
        input = try arguments.value(Self.input)
        json = arguments[Self.json]
    }

    /// What `--json` prints.
    struct Report: Encodable {
        var asset: Asset
        /// Keyframe presentation times of the main video track.
        var keyframes: [MediaTime]
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let asset = try await Asset.open(input)
        var keyframes: [MediaTime] = []
        if let video = asset.videoTrack { keyframes = try await asset.keyframes(of: video) }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(Report(asset: asset, keyframes: keyframes))
            context.output.writeLine(String(decoding: data, as: UTF8.self))
            return .success
        }
        let out = context.output
        out.writeLine("\(asset.location)")
        out.writeLine("  container  \(asset.formatLongName)")
        out.writeLine("  duration   \(asset.duration.map { $0.clockDescription } ?? "unknown")"
                      + (asset.bitRate.map { "  \($0 / 1000) kb/s" } ?? ""))
        for track in asset.tracks {
            var parts = ["#\(track.id)", track.kind.rawValue, track.codecName == "none" ? (track.codecTag ?? "none") : track.codecName]
            if let p = track.profile { parts.append("(\(p))") }
            if let w = track.width, let h = track.height { parts.append("\(w)x\(h)") }
            if let sar = track.sampleAspectRatio { parts.append("SAR \(sar)") }
            if track.rotation != 0 { parts.append("rotate \(track.rotation)°") }
            if let r = track.frameRate { parts.append("\(r) fps") }
            if let f = track.pixelFormat { parts.append(f) }
            if track.isHDR || track.colorPrimaries == "bt2020" {
                parts.append([track.colorPrimaries, track.colorTransfer].compactMap { $0 }.joined(separator: "/"))
            }
            if track.hdr?.masteringDisplay != nil { parts.append("HDR10") }
            if let sr = track.sampleRate { parts.append("\(sr) Hz") }
            if let l = track.channelLayout { parts.append(l) }
            if let s = track.startTime { parts.append("start \(s)") }
            if let d = track.duration { parts.append("duration \(d)") }
            if let b = track.bitRate { parts.append("\(b / 1000) kb/s") }
            if let lang = track.language { parts.append("[\(lang)]") }
            if let title = track.title { parts.append("\"\(title)\"") }
            if track.isDefault && track.kind != .video { parts.append("default") }
            out.writeLine("  " + parts.joined(separator: "  "))
        }
        for chapter in asset.chapters {
            out.writeLine("  chapter    \(chapter.start)–\(chapter.end)  \(chapter.metadata["title"] ?? "")")
        }
        if !keyframes.isEmpty {
            let shown = keyframes.prefix(20).map { $0.description }.joined(separator: " ")
            out.writeLine("  keyframes  \(keyframes.count): \(shown)" + (keyframes.count > 20 ? " …" : ""))
        }
        return .success
    }
}
