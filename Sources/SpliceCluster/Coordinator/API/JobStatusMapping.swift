import Foundation
import SpliceStore
import SpliceWire

/// How the store's jobs read in the client API: states by their API names (`completed` is
/// `succeeded`), progress as a fraction, times in milliseconds since the epoch.
enum JobStatusMapping {
    /// The API's state names, in lifecycle order.
    static let stateNames = ["queued", "planning", "running", "stitching", "succeeded", "failed", "cancelled"]

    static func name(of state: JobState) -> String {
        state == .completed ? "succeeded" : state.rawValue
    }

    /// The store state for an API name (`completed` is accepted for `succeeded`).
    static func state(named name: String) -> JobState? {
        name == "succeeded" ? .completed : JobState(rawValue: name)
    }

    /// The job as JOB_STATUS. `runningProgress` is the summed PROGRESS of its running attempts.
    static func status(of job: Job, runningProgress: Double, waiting: String? = nil) -> JobStatus {
        let planned = job.segmentsTotal > 0
        let fraction: Double
        switch job.state {
        case .completed: fraction = 1
        case _ where planned:
            // Stitching is the last step, so the bar stops short of 1 until the output exists.
            fraction = min(0.99, (Double(job.segmentsDone) + runningProgress) / Double(job.segmentsTotal))
        default: fraction = 0
        }
        return JobStatus(
            job: job.id, state: name(of: job.state), input: job.sourceURL, output: job.outputURL,
            priority: job.priority, segmentsTotal: planned ? job.segmentsTotal : nil, segmentsDone: job.segmentsDone,
            fraction: fraction, submittedAtMilliseconds: milliseconds(job.createdAt),
            finishedAtMilliseconds: job.finishedAt.map(milliseconds), error: job.error,
            waiting: job.state == .running ? waiting : nil)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// A stable 32-byte stand-in for a worker without a key (a connection on an endpoint without
    /// CURVE), so `WORKER_LIST` can still list it: FNV-1a over its store key, four ways. Not a key.
    static func standInKey(for storeKey: String) -> CurvePublicKey {
        var bytes: [UInt8] = []
        for seed in UInt64(0)..<4 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
            for byte in storeKey.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: hash >> shift)) }
        }
        // 32 bytes always make a key.
        return try! CurvePublicKey(bytes: Data(bytes))
    }
}
