import CSpliceSystem
import Foundation
import Synchronization
public import SpliceCore
public import SpliceMedia

/// Runs media tasks as the configuration says.
public struct MediaTaskRunner: Sendable {
    let isolation: MediaTaskIsolation

    public init(isolation: MediaTaskIsolation) {
        self.isolation = isolation
    }

    func run(_ task: MediaTask) async throws(MediaError) -> MediaTaskOutput {
        switch isolation {
        case .inProcess:
            return try await task.run()
        case .childProcess(let executable, let staging):
            return try await MediaTaskChild(executable: executable, task: task, staging: staging).run()
        }
    }

    func plan(source: String, request: TranscodeRequest, lanes: Int) async throws(MediaError) -> SegmentPlan {
        guard case .plan(let plan) = try await run(.plan(source: source, request: request, lanes: lanes)) else {
            throw MediaError(.internalError, "the planning step answered with something else than a plan")
        }
        return plan
    }

    func stitch(plan: SegmentPlan, segments: [Int: String], checksums: [Int: SHA256Digest], output: String,
                overwrite: Bool, figures: [Int: SegmentFigures] = [:]) async throws(MediaError) -> StitchSummary {
        let task = MediaTask.stitch(plan: plan, segments: segments, checksums: checksums, output: output,
                                    overwrite: overwrite, figures: figures)
        guard case .stitch(let summary) = try await run(task) else {
            throw MediaError(.internalError, "the stitching step answered with something else than a summary")
        }
        return summary
    }

    /// Cuts segment `segment`'s source excerpt into `output` (a source that is gone or unreadable
    /// fails with the reason, `file-not-found`); returns its size and SHA-256 for the transfer.
    public func excerpt(plan: SegmentPlan, segment: Int, output: String) async throws(MediaError) -> SourceExcerpt.Written {
        guard case .excerpt(let written) = try await run(.excerpt(plan: plan, segment: segment, output: output)) else {
            throw MediaError(.internalError, "the excerpt step answered with something else than an excerpt")
        }
        return written
    }

    /// Cuts the excerpts of `segments` into `directory` in one step (``MediaTask/excerpts(plan:segments:directory:)``).
    public func excerpts(plan: SegmentPlan, segments: [Int], directory: String) async throws(MediaError)
        -> [Int: SourceExcerpt.Written]
    {
        guard case .excerpts(let written) = try await run(.excerpts(plan: plan, segments: segments, directory: directory))
        else {
            throw MediaError(.internalError, "the excerpt step answered with something else than excerpts")
        }
        return written
    }
}
