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
final class JobStitcher: Sendable {
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
        let output = Self.outputURL(job.output)
        logger.info("stitching job", ["job": job.id.description, "output": output.path])
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
            summary = try await media.stitch(plan: plan, segments: paths, checksums: checksums, output: output.path,
                                             overwrite: true, figures: figures)
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
            for path in written.reversed() { removed = await FileRemoval.remove(path.path) && removed }
            logger.info("job ended while it was stitched; its output removed",
                        ["job": job.id.description, "output": output.path, "removed": removed])
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
        logger.info("job completed", ["job": job.id.description, "output": output.path, "frames": summary.videoFrames,
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

    private func fail(_ job: Job, reason: String) async {
        if await rounds.fail(job, reason: reason) { await cleanUp(job.id) }
    }

    private func cleanUp(_ job: JobID) async {
        store.forget(job: job)
        await cleaner.removeJob(job)
    }

    /// The job's output as a file URL (`file://` URLs and plain paths both work).
    static func outputURL(_ text: String) -> URL {
        if text.hasPrefix("file://"), let url = URL(string: text) { return url }
        return URL(fileURLWithPath: text)
    }
}

/// Removes a file off Swift's cooperative pool (the output folder may be on NFS).
enum FileRemoval {
    /// Removes the file at `path`, or the folder with everything in it; true when it is gone.
    static func remove(_ path: String) async -> Bool {
        (try? await FileSystemQueue.run {
            if unlink(path) == 0 { return true }
            guard errno == EISDIR || errno == EPERM else { return false }
            return (try? FileManager.default.removeItem(atPath: path)) != nil
        }) ?? false
    }
}
