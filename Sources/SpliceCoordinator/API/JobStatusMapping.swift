import SpliceCore
import Foundation
import SpliceStore
import SpliceWire

/// How the store's jobs read in the client API: progress as a fraction, times in milliseconds
/// since the epoch. States are `JobState` on both sides (one spelling).
enum JobStatusMapping {
    /// The job as JOB_STATUS. `running` is its running attempts' PROGRESS; `progress` its costs
    /// and backup attempts (nil: not read); `segments` its segments with their figures (nil: not
    /// read, as in JOB_LIST).
    static func status(of job: Job, running: RunningProgress, progress: JobProgress?, waiting: String? = nil,
                       segments: [SegmentReport]? = nil) -> JobStatus
    {
        let planned = job.segmentsTotal > 0
        let backups = progress.flatMap { $0.backupsStarted > 0 ? $0 : nil }
        return JobStatus(
            job: job.id, state: job.state, input: job.input, output: job.output,
            priority: job.priority, segmentsTotal: planned ? job.segmentsTotal : nil, segmentsDone: job.segmentsDone,
            fraction: fraction(state: job.state, segmentsDone: job.segmentsDone, segmentsTotal: job.segmentsTotal,
                               progress: progress, running: running),
            submittedAtMilliseconds: milliseconds(job.createdAt),
            finishedAtMilliseconds: job.finishedAt.map(milliseconds), error: job.error,
            waiting: job.state == .running ? waiting : nil, backupsStarted: backups?.backupsStarted,
            backupsWon: backups?.backupsWon,
            segments: segments.flatMap { $0.isEmpty ? nil : $0.map {
                SegmentStatus(index: $0.index, state: $0.state, figures: $0.figures)
            } })
    }

    /// 0…1 over the whole job: the work done (segments done plus the running ones' PROGRESS),
    /// weighted by the segments' costs when the plan has them, else by count. Stitching is the
    /// last step, so the figure stops short of 1 until the output exists.
    static func fraction(
        state: JobState, segmentsDone: Int, segmentsTotal: Int, progress: JobProgress?, running: RunningProgress
    ) -> Double {
        if state == .succeeded { return 1 }
        guard segmentsTotal > 0 else { return 0 }
        if let progress, progress.costTotal > 0 {
            return min(0.99, max(0, (Double(progress.costDone) + running.cost) / Double(progress.costTotal)))
        }
        return min(0.99, (Double(segmentsDone) + running.segments) / Double(segmentsTotal))
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
