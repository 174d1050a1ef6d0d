import Foundation
import SpliceMedia

/// `splice export INPUT OUTPUT [flags]`: one export session, with a progress bar.
struct ExportCommand: Command {
    static let input = Positional<String>("input", help: "The source media file or URL, or an object: s3://BUCKET/KEY.") { $0 }
    static let output = Positional<String>("output",
        help: "The file to write (.mp4, .mov, .mkv, .webm), or an object: s3://BUCKET/KEY.") { $0 }

    static let configuration = CommandConfiguration(
        name: "export", abstract: "Transcode one file on this machine with a single encoder.",
        discussion: """
            Re-encodes video and audio (or copies them with --copy-video / --copy-audio). The output \
            appears only when the export succeeds; on failure or Ctrl-C nothing is left behind. An \
            existing output file is kept and the export refused unless -y (--overwrite) is given; \
            the input is never replaced. Input and output may be objects in S3 or an S3-compatible \
            store (s3://BUCKET/KEY, credentials from AWS_* and ~/.aws): the output streams into a \
            multipart upload while it is written (an MP4 with --faststart is written locally, then \
            uploaded) and appears only when complete.
            """,
        arguments: [input, output] + ExportOptions.arguments + OutputOptions.arguments, environment: [.ffmpegLog, .objectStorage])

    let input: String
    let output: String
    let options: ExportOptions
    let destination: OutputOptions

    init(_ arguments: ParsedArguments) throws {
        input = try arguments.value(Self.input)
        output = try arguments.value(Self.output)
        options = try ExportOptions(arguments)
        destination = try OutputOptions(arguments)
    }

    func validate() throws {
        _ = try options.validChoices(output: output)
        try destination.check(output: output, inputs: [input])
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let asset = try await Asset.open(input)
        let session = ExportSession(asset: asset, output: output)
        try options.configure(session, output: output)
        session.overwritesExistingFile = destination.overwrite
        let bar = ProgressBar(label: OutputOptions.name(of: output), output: context.errorOutput)
        let progress = Task {
            for await fraction in session.progressUpdates { bar.update(fraction: fraction) }
        }
        do {
            try await session.export()
        } catch {
            progress.cancel()
            bar.clear()
            throw error
        }
        _ = await progress.value
        bar.finish()
        let summary = session.summary
        for notice in summary?.notices ?? [] {
            context.errorOutput.writeLine("note: \(notice)")
        }
        var line = "wrote \(output)"
        if let s = summary {
            line += ": \(s.videoFrames) video frames"
            if s.audioSamples > 0 { line += ", \(s.audioSamples) audio samples" }
            line += ", \(s.bytes / 1024) KiB"
        }
        context.output.writeLine(line)
        return .success
    }
}
