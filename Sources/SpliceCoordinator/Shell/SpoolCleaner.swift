import Dispatch
import Foundation
import SpliceCore
import SpliceLog
import SpliceDaemon

/// Removes segment files from the shared spool: a job's whole directory once the job has ended
/// (stitched, failed or cancelled), which takes the recorded segments and every stale attempt's
/// garbage with it. File system calls (NFS can be slow) run on a queue of their own, never on
/// Swift's cooperative pool.
final class SpoolCleaner: Sendable {
    let layout: SpoolLayout
    let logger: Logger
    private let queue = DispatchQueue(label: "splice.coordinator.spool")

    init(layout: SpoolLayout, logger: Logger) {
        self.layout = layout
        self.logger = logger
    }

    /// Removes `<spool>/jobs/<job>/` if it exists.
    func removeJob(_ job: JobID) async {
        let directory = layout.jobDirectory(job)
        let failure: String? = await onQueue {
            guard FileManager.default.fileExists(atPath: directory.path) else { return nil }
            do {
                try FileManager.default.removeItem(at: directory)
                return nil
            } catch {
                return error.localizedDescription
            }
        }
        if let failure {
            logger.warning("segment files not removed", ["job": job.description, "path": directory.path,
                                                         "error": failure])
        } else {
            logger.debug("segment files removed", ["job": job.description])
        }
    }

    /// The job ids that have a directory in the spool.
    func jobsWithFiles() async -> [JobID] {
        let root = layout.root.appendingPathComponent("jobs")
        return await onQueue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
            return names.compactMap { JobID($0) }
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
