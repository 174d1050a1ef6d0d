import Foundation
import SpliceMedia

/// `splice segment-remux SEGMENT OUTPUT`: a diagnostic that copies one segment file's packets
/// into a container ffprobe and ffmpeg read. Hidden from the command list.
struct SegmentRemuxCommand: Command {
    static let segment = Positional<String>("segment", help: "A .splseg segment file.") { $0 }
    static let output = Positional<String>("output", help: "The file to write (.mp4, .mkv or .ts).") { $0 }

    static let configuration = CommandConfiguration(
        name: "segment-remux", abstract: "Copy a segment file into a container FFmpeg's tools read.",
        arguments: [segment, output], isHidden: true)

    let segment: String
    let output: String

    init(_ arguments: ParsedArguments) throws {
        segment = try arguments.value(Self.segment)
        output = try arguments.value(Self.output)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        try await SegmentRemux.remux(segment: segment, to: URL(fileURLWithPath: output))
        context.output.writeLine("wrote \(output)")
        return .success
    }
}
