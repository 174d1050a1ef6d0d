import Foundation
import Glibc
import SpliceCore
import SpliceLog
import SpliceMedia
import SpliceStore

/// Stitches jobs whose segments are all done (`stitching`): the recorded segment files, checked
/// against the recorded checksums, joined by `Stitcher` into the job's output; then
/// `stitching → completed` and the job's spool directory is removed. A stitch the stitcher
/// refuses (a missing, foreign or damaged segment) fails the job with the stitcher's message.
/// A job found in `stitching` after a restart is stitched again: the output only appears on success.
/// A job that leaves `stitching` meanwhile (cancelled on request) has its stitch stopped: the
/// stitch removes its partial file or aborts its multipart upload, so a cancelled job neither
/// finishes uploading an output only to delete it, nor replaces an object it then removes.
final class JobStitcher: Sendable {
    /// How often the state of a job being stitched is read, to stop its stitch once it ended.
    static let watchInterval = Duration.milliseconds(500)

    private let repository: JobRepository
    private let store: CoordinatorStore
    private let cleaner: SpoolCleaner
    private let logger: Logger
    private let rounds: JobRounds
    private let media: MediaTaskRunner
    private let metrics: CoordinatorMetrics

    init(repository: JobRepository, store: CoordinatorStore, cleaner: SpoolCleaner, media: MediaTaskRunner,
         metrics: CoordinatorMetrics, logger: Logger) {
        self.media = media
        self.metrics = metrics
        self.repository = repository
        self.store = store
        self.cleaner = cleaner
        self.logger = logger
        self.rounds = JobRounds(stage: "stitching", repository: repository, logger: logger)
    }

    /// One pass over the jobs waiting to be stitched.
    func round() async {
        await rounds.forEachDue(in: [.stitching]) { await stitch($0) }
    }

    private func stitch(_ job: Job) async {
        let output = Self.output(job.output)
        logger.info("stitching job", ["job": job.id.description, "output": output])
        let summary: StitchSummary
        let started = ContinuousClock.now
        var written = [output]
        do {
            guard let plan = try job.plan?.decode(SegmentPlan.self) else {
                throw MediaError(.internalError, "job \(job.id) has no plan")
            }
            // A streaming package publishes its rendition folders, then its manifests.
            if plan.package != nil { written = PackageLayout(plan: plan, output: output).publishedPaths }
            var paths: [Int: String] = [:]
            var checksums: [Int: SHA256Digest] = [:]
            var figures: [Int: SegmentFigures] = [:]
            for segment in try await repository.segments(ofJob: job.id) where segment.state == .done {
                guard let path = segment.outputPath else { continue }
                paths[segment.plan.index] = path
                checksums[segment.plan.index] = segment.checksum
                figures[segment.plan.index] = segment.figures
            }
            // Replacing: after a restart the job's own earlier stitch may already be there. (A file
            // someone else put there was refused at SUBMIT unless the client said -y.)
            summary = try await untilEnded(job.id) { [media, paths, checksums, figures] in
                try await media.stitch(plan: plan, segments: paths, checksums: checksums, output: output, overwrite: true,
                                       figures: figures)
            }
        } catch is JobEnded {
            // The stitch stopped before its output appeared (a partial file removed, an upload aborted).
            logger.info("job ended while it was stitched; its stitch stopped", ["job": job.id.description, "output": output])
            rounds.succeeded(job)
            await cleanUp(job.id)
            return
        } catch let error as MediaError where !error.isRetryable {
            await fail(job, reason: "stitching failed: \(error.message)")
            return
        } catch let error as DecodingError {
            await fail(job, reason: "stitching failed: the job's plan cannot be read: \(error)")
            return
        } catch {
            if await rounds.retry(job, after: error) { await cleanUp(job.id) }
            return
        }
        let stitchTime = ContinuousClock.now - started
        let completed: Job
        do {
            completed = try await repository.completeJob(jobID: job.id)
        } catch let error as StoreError where error.code == .invalidTransition {
            // Cancelled (or failed) while it was being stitched: the output must not outlive it. A
            // package goes manifests first, so no playlist ever names a folder already gone.
            var removed = true
            for path in written.reversed() { removed = await FileRemoval.remove(path) && removed }
            logger.info("job ended while it was stitched; its output removed",
                        ["job": job.id.description, "output": output, "removed": removed])
            rounds.succeeded(job)
            await cleanUp(job.id)
            return
        } catch {
            logger.warning("job stitched but not recorded; it will be stitched again",
                           ["job": job.id.description, "error": "\(error)"])
            return
        }
        rounds.succeeded(job)
        metrics.stitchSeconds.observe(stitchTime.inSeconds)
        if let finished = completed.finishedAt {
            metrics.jobDuration.observe(max(0, finished.timeIntervalSince(completed.createdAt)))
        }
        logger.info("job completed", ["job": job.id.description, "output": output, "frames": summary.videoFrames,
                                      "bytes": summary.bytes])
        if let report = summary.quality {
            let psnr = String(format: "%.2f", report.overall?.psnrY ?? 0)
            let ssim = String(format: "%.4f", report.overall?.ssimY ?? 0)
            let first: String = report.problems.first?.message ?? "-"
            let fields: KeyValuePairs<String, any LogValue> = [
                "job": job.id.description, "passed": report.passed, "psnr_y": psnr, "ssim_y": ssim,
                "problems": report.problems.count, "first_problem": first]
            if report.passed {
                logger.info("job output verified", fields)
            } else {
                logger.warning("job output failed its quality checks (--verify warn: kept)", fields)
            }
        }
        if let dry = summary.videoBufferUnderflow {
            logger.warning("stitched video runs its buffer model dry", ["job": job.id.description, "at": "\(dry)",
                                                                        "lowest_percent": summary.videoBufferLowestPercent ?? 0])
        }
        await cleanUp(job.id)
    }

    /// The job left `stitching` while `stitch` ran, which was then stopped before it finished.
    private struct JobEnded: Error {}

    /// Runs `stitch`, reading the job's state every ``watchInterval`` meanwhile; once the job is
    /// no longer `stitching`, cancels `stitch` (a media-task child gets SIGTERM) and throws
    /// ``JobEnded`` — unless the stitch finished first, whose result is returned (the caller then
    /// finds the job ended and removes the output).
    private func untilEnded<T: Sendable>(_ job: JobID, _ stitch: @escaping @Sendable () async throws -> T) async throws -> T {
        let repository = self.repository
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await stitch() }
            group.addTask {
                while true {
                    try await Task.sleep(for: Self.watchInterval)
                    // A failed read is not an ending: the next one will tell.
                    if let current = try? await repository.job(id: job), current.state != .stitching { return nil }
                }
            }
            defer { group.cancelAll() }
            var ended = false
            while true {
                let next: T??
                do {
                    next = try await group.next()
                } catch {
                    if ended { throw JobEnded() }
                    throw error
                }
                guard let finished = next else { break }
                if let result = finished { return result }
                ended = true
                group.cancelAll()
            }
            throw JobEnded()
        }
    }

    private func fail(_ job: Job, reason: String) async {
        if await rounds.fail(job, reason: reason) { await cleanUp(job.id) }
    }

    private func cleanUp(_ job: JobID) async {
        store.forget(job: job)
        await cleaner.removeJob(job)
    }

    /// The job's output as a path (`file://` URLs and plain paths both work) or an object location.
    static func output(_ text: String) -> String {
        if text.hasPrefix("file://"), let url = URL(string: text) { return url.path }
        return text
    }
}

/// Removes an output off Swift's cooperative pool (the output folder may be on NFS, the object
/// behind a network).
enum FileRemoval {
    /// Removes the file at `path`, or the folder with everything in it — or the object at a
    /// location in storage, or every object under it taken as a folder (a package's rendition
    /// folder); true when it is gone.
    static func remove(_ path: String) async -> Bool {
        (try? await FileSystemQueue.run {
            if let storage = try StorageRegistry.storage(for: path) {
                for object in try storage.list(prefix: path + "/") { try storage.remove(object) }
                try storage.remove(path)
                return true
            }
            if unlink(path) == 0 { return true }
            guard errno == EISDIR || errno == EPERM else { return false }
            return (try? FileManager.default.removeItem(atPath: path)) != nil
        }) ?? false
    }
}
