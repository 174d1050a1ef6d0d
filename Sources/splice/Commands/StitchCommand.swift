import Foundation
import SpliceMedia

/// `splice stitch DIR OUTPUT`: joins segments kept by `transcode --keep-segments DIR` (or a
/// coordinator's spool) using the plan.json there. For operators re-running the last step.
struct StitchCommand: Command {
    static let directory = Positional<String>("dir", help: "A folder with plan.json and segment-NNNNN.splseg files.") { $0 }
    static let output = Positional<String>("output", help: "The file to write.") { $0 }

    static let configuration = CommandConfiguration(
        name: "stitch", abstract: "Join kept segment files into the final output.",
        arguments: [directory, output])

    let directory: String
    let output: String

    init(_ arguments: ParsedArguments) throws {
        directory = try arguments.value(Self.directory)
        output = try arguments.value(Self.output)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let dir = URL(fileURLWithPath: directory)
        let planURL = dir.appendingPathComponent("plan.json")
        let plan: SegmentPlan
        do {
            plan = try JSONDecoder().decode(SegmentPlan.self, from: Data(contentsOf: planURL))
        } catch {
            throw UsageError("cannot read '\(planURL.path)': it must be the plan.json written by transcode --keep-segments")
        }
        var segments: [Int: String] = [:]
        for spec in plan.segments {
            segments[spec.index] = dir.appendingPathComponent(String(format: "segment-%05d.splseg", spec.index)).path
        }
        let summary = try await Stitcher(plan: plan).stitch(segments: segments, to: URL(fileURLWithPath: output))
        context.output.writeLine("wrote \(output): \(summary.videoFrames) video frames, \(summary.audioPackets) audio packets")
        return .success
    }
}
