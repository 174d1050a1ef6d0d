import Foundation
import SpliceMedia

/// `splice stitch DIR OUTPUT`: joins segments kept by `transcode --keep-segments DIR` (or a
/// coordinator's spool) using the plan.json there. For operators re-running the last step.
struct StitchCommand: Command {
    static let directory = Positional<String>("dir", help: "A folder with plan.json and segment-NNNNN.splseg files.") { $0 }
    static let output = Positional<String>("output", help: "The file to write, or an object: s3://BUCKET/KEY.") { $0 }

    static let configuration = CommandConfiguration(
        name: "stitch", abstract: "Join kept segment files into the final output.",
        discussion: """
            The output appears only when the stitch succeeds. An existing output file is kept and \
            the stitch refused unless -y (--overwrite) is given; the plan and segment files are \
            never replaced.
            """,
        arguments: [directory, output] + OutputOptions.arguments, environment: [.objectStorage])

    let directory: String
    let output: String
    let destination: OutputOptions

    init(_ arguments: ParsedArguments) throws {
        directory = try arguments.value(Self.directory)
        output = try arguments.value(Self.output)
        destination = try OutputOptions(arguments)
    }

    func validate() throws {
        let (_, segments) = try load()
        try destination.check(output: output, inputs: [planURL.path] + segments.keys.sorted().map { segments[$0]! })
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let (plan, segments) = try load()
        let summary = try await Stitcher(plan: plan).stitch(segments: segments, to: output, overwrite: destination.overwrite)
        context.output.writeLine("wrote \(output): \(summary.videoFrames) video frames, \(summary.audioPackets) audio packets")
        return .success
    }

    private var planURL: URL { URL(fileURLWithPath: directory).appendingPathComponent("plan.json") }

    /// The plan in the folder and the segment file it expects for each index.
    private func load() throws -> (SegmentPlan, [Int: String]) {
        let plan: SegmentPlan
        do {
            plan = try JSONDecoder().decode(SegmentPlan.self, from: Data(contentsOf: planURL))
        } catch {
            throw UsageError("cannot read '\(planURL.path)': it must be the plan.json written by transcode --keep-segments")
        }
        var segments: [Int: String] = [:]
        for spec in plan.segments {
            segments[spec.index] = URL(fileURLWithPath: directory)
                .appendingPathComponent(String(format: "segment-%05d.splseg", spec.index)).path
        }
        return (plan, segments)
    }
}
