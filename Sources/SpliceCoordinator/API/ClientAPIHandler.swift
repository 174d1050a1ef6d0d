import Foundation
import Glibc
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceWire

/// Answers the client API (`splice submit/status/jobs/cancel/workers`). Every request is safe to
/// repeat: SUBMIT is keyed by its submission key, CANCEL/ENROLL/REVOKE are idempotent in the
/// store, and the others only read.
final class ClientAPIHandler: Sendable {
    private let repository: JobRepository
    private let shell: CoordinatorShell
    private let workerEndpoint: CoordinatorWorkerEndpoint
    /// The worker keys the ZAP handler admits; nil without CURVE.
    private let enrolledKeys: EnrolledKeys?
    private let maxAttempts: Int
    private let plannerWake: WakeSignal
    private let logger: Logger
    private let sourceProtocols: SourceProtocols
    private let inputRoots: PathRoots
    private let outputRoots: PathRoots

    init(
        repository: JobRepository, shell: CoordinatorShell, workerEndpoint: CoordinatorWorkerEndpoint,
        enrolledKeys: EnrolledKeys?, maxAttempts: Int, plannerWake: WakeSignal, sourceProtocols: SourceProtocols,
        inputRoots: PathRoots, outputRoots: PathRoots, logger: Logger
    ) {
        self.sourceProtocols = sourceProtocols
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.repository = repository
        self.shell = shell
        self.workerEndpoint = workerEndpoint
        self.enrolledKeys = enrolledKeys
        self.maxAttempts = maxAttempts
        self.plannerWake = plannerWake
        self.logger = logger
    }

    /// How long a read waits on the store before it answers `unavailable`: less than a client's
    /// attempt timeout, so during a database outage `splice status` and `submit --wait` hear that
    /// the store is down instead of concluding that the coordinator is.
    static let readStoreWait: Duration = .seconds(4)

    /// The reply to `request`; never throws — failures become `ERROR`.
    func reply(to request: APIRequest) async -> APIReply {
        switch request {
        case .status, .list, .workers:
            let answer = await withDeadline(Self.readStoreWait) { await self.answer(request) }
            return answer ?? .error(APIError(
                .unavailable, "the job store is not answering (is PostgreSQL up?); try again", isRetryable: true))
        case .submit, .cancel, .enroll, .revoke:
            return await answer(request)
        }
    }

    private func answer(_ request: APIRequest) async -> APIReply {
        do {
            switch request {
            case .submit(let submit): return try await self.submit(submit)
            case .status(let query): return .status(try await status(of: query.job))
            case .list(let list): return try await self.list(list)
            case .cancel(let cancel): return try await self.cancel(cancel.job)
            case .workers: return .workers(WorkerList(workers: try await workers()))
            case .enroll(let enroll): return try await self.enroll(enroll)
            case .revoke(let revoke): return try await self.revoke(revoke.publicKey)
            }
        } catch let error as APIError {
            return .error(error)
        } catch let error as StoreError where error.isRetryable {
            return .error(APIError(.unavailable, "the job store is unreachable; try again",
                                   isRetryable: true))
        } catch {
            logger.error("API request failed", ["type": type(of: request.body).messageType, "error": "\(error)"])
            return .error(APIError(.internal, "the coordinator could not answer: \(error)"))
        }
    }

    // MARK: - Jobs

    private func submit(_ submit: SubmitJob) async throws -> APIReply {
        if let refusal = sourceProtocols.refusal(of: submit.input) { throw APIError(.invalidRequest, refusal) }
        guard submit.output.hasPrefix("/") else {
            throw APIError(.invalidRequest, "`output` must be an absolute path, not '\(submit.output.prefix(200))'")
        }
        // Errors name the request's fields (`export.video.quality`), not the CLI's flags: the CLI
        // checked its own flags before it sent the request, and says its own words for the codes
        // it knows (`output-exists`).
        let request: TranscodeRequest
        do {
            request = try submit.export.decode(TranscodeRequest.self)
            try request.validate()
        } catch let error as SettingsError {
            throw APIError(.invalidRequest, error.message(under: "export"))
        } catch {
            throw APIError(.invalidRequest, "`export` is not a valid TranscodeRequest (docs/protocol.md, The export "
                + "settings): \(DecodingFailure.describe(error, under: "export"))")
        }
        let key = submit.submissionKey ?? UUID().uuidString
        guard !key.isEmpty else { throw APIError(.invalidRequest, "`submissionKey` is empty; omit it or send a UUID") }
        let fingerprint = try SubmissionFingerprint.of(submit, request: request)
        // A resend of a SUBMIT that created its job gets that job, whatever the files look like now
        // (its output may exist by now: the job wrote it) — if it is the same request.
        if let existing = try await repository.job(idempotencyKey: key) {
            try SubmissionFingerprint.check(existing, key: key, against: fingerprint)
            return .submitted(JobSubmitted(job: existing.id))
        }
        try await checkPaths(input: submit.input, output: submit.output, overwrite: request.overwrite,
                             report: request.quality?.reportPath)
        let creation = try await repository.createJob(JobSubmission(
            idempotencyKey: key, fingerprint: fingerprint, input: submit.input, output: submit.output,
            settings: try PostgresJSON(encoding: request), priority: submit.priority ?? 0, maxAttempts: maxAttempts))
        // Another SUBMIT with this key won the race to create the job.
        if !creation.created { try SubmissionFingerprint.check(creation.job, key: key, against: fingerprint) }
        if creation.created {
            logger.info("job submitted", ["job": creation.job.id.description, "input": submit.input, "output": submit.output])
            plannerWake.signal()
        }
        return .submitted(JobSubmitted(job: creation.job.id))
    }

    /// What the coordinator checks before it accepts a job, so a job that cannot succeed is refused
    /// in well under a second instead of failing after every segment is encoded: both paths
    /// inside the configured roots (links resolved), a path input readable here (a URL input is
    /// opened when the job is planned), and the output
    /// writable (`OutputDestination`: its folder exists and takes a file, it is not the input,
    /// it does not exist unless `overwrite`). A verified job's report (`export.quality.reportPath`),
    /// which the coordinator writes after the stitch, is held to the same roots and may replace
    /// an earlier report, never the input or the output.
    private func checkPaths(input: String, output: String, overwrite: Bool, report: String?) async throws {
        let (inputRoots, outputRoots) = (self.inputRoots, self.outputRoots)
        let isURL = SourceProtocols.isURL(input)
        let refusal: Refusal? = try await FileSystemQueue.run {
            // A URL is opened (and its failure reported) when the job is planned; the roots are for paths.
            if !inputRoots.isEmpty && !isURL {
                guard let resolved = PathRoots.realPath(input), inputRoots.contains(resolved: resolved) else {
                    return Refusal(.invalidRequest, "`input` \(input) is not inside an input root of this coordinator ("
                        + inputRoots.roots.joined(separator: ", ") + ")")
                }
            }
            if !outputRoots.isEmpty {
                guard let resolved = PathRoots.resolvedOutput(output), outputRoots.contains(resolved: resolved) else {
                    return Refusal(.invalidRequest, "`output` \(output) is not inside an output root of this coordinator ("
                        + outputRoots.roots.joined(separator: ", ") + ")")
                }
            }
            if let report {
                let field = "`export.quality.reportPath` \(report)"
                guard report.hasPrefix("/") else { return Refusal(.invalidRequest, "\(field) must be an absolute path") }
                if !outputRoots.isEmpty {
                    guard let resolved = PathRoots.resolvedOutput(report), outputRoots.contains(resolved: resolved) else {
                        return Refusal(.invalidRequest, "\(field) is not inside an output root of this coordinator ("
                            + outputRoots.roots.joined(separator: ", ") + ")")
                    }
                }
                guard PathRoots.resolvedOutput(report) != PathRoots.resolvedOutput(output) else {
                    return Refusal(.invalidRequest, "\(field) is the output; choose another file for the report")
                }
                do {
                    try OutputDestination.check(output: report, inputs: isURL ? [] : [input], overwrite: true)
                } catch let error as MediaError {
                    return Refusal(.invalidRequest, "\(field): \(error.message)")
                } catch {
                    return Refusal(.invalidRequest, "\(field): \(error)")
                }
            }
            if !isURL {
                let fd = open(input, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    let reason = String(cString: strerror(errno))
                    return Refusal(.invalidRequest, "`input` \(input) cannot be read by the coordinator (\(reason)); the "
                        + "coordinator and the workers must see it at this path")
                }
                close(fd)
            }
            do {
                try OutputDestination.check(output: output, inputs: isURL ? [] : [input], overwrite: overwrite)
            } catch let error as MediaError where error.code == .outputExists {
                return Refusal(.outputExists, "`output` \(output) already exists and `export.overwrite` is false; set it "
                    + "to true to replace the file, or choose another output")
            } catch let error as MediaError {
                return Refusal(.invalidRequest, error.message)
            } catch {
                return Refusal(.invalidRequest, "\(error)")
            }
            return nil
        }
        if let refusal { throw APIError(refusal.code, refusal.message) }
    }

    private func status(of job: JobID) async throws -> JobStatus {
        guard let stored = try await repository.job(id: job) else { throw notFound(job) }
        let waiting = stored.state == .running ? try await repository.waitingReason(ofJob: job) : nil
        let progress = try await repository.progress(ofJobs: [job])[job]
        let segments = try await repository.segmentReports(ofJob: job)
        return JobStatusMapping.status(of: stored, running: await shell.runningProgress(ofJob: job),
                                       progress: progress, waiting: waiting, segments: segments)
    }

    private func list(_ list: ListJobs) async throws -> APIReply {
        let states = list.state.map { [$0] } ?? JobState.allCases
        // `limit` is within WireLimits.listLimit (1…1000) or the request never got here.
        let limit = list.limit ?? 50
        // The store lists by priority and age; the API shows the newest first.
        let jobs = try await repository.jobs(in: states, limit: 10_000)
            .sorted { $0.createdAt > $1.createdAt }.prefix(limit)
        let progress = try await repository.progress(ofJobs: jobs.map(\.id))
        var statuses: [JobStatus] = []
        for job in jobs {
            statuses.append(JobStatusMapping.status(of: job, running: await shell.runningProgress(ofJob: job.id),
                                                    progress: progress[job.id]))
        }
        return .jobs(JobList(jobs: statuses))
    }

    private func cancel(_ job: JobID) async throws -> APIReply {
        let stored: Job
        do {
            stored = try await repository.cancelJob(jobID: job, reason: "cancelled on request")
        } catch let error as StoreError where error.code == .notFound {
            throw notFound(job)
        } catch let error as StoreError where error.code == .invalidTransition {
            // Already finished: it keeps its state.
            guard let finished = try await repository.job(id: job) else { throw notFound(job) }
            return .cancelled(JobCancelled(job: job, state: finished.state))
        }
        if stored.state == .cancelled {
            logger.info("job cancelled", ["job": job.description])
            await shell.jobEnded(job, reason: .jobCancelled)
        }
        return .cancelled(JobCancelled(job: job, state: stored.state))
    }

    private func notFound(_ job: JobID) -> APIError {
        APIError(.notFound, "no job \(job); `splice jobs` lists the known ones")
    }

    // MARK: - Workers

    private func workers() async throws -> [WorkerInfo] {
        let sessions = await shell.sessions
        var infos: [WorkerInfo] = []
        for worker in try await repository.workers() {
            let session = sessions.first { $0.workerID == worker.id }
            let key: CurvePublicKey
            if let enrolled = try? CurvePublicKey(z85: worker.publicKey) {
                key = enrolled
            } else {
                // An unauthenticated connection (no CURVE): listed only while connected.
                guard session != nil else { continue }
                key = JobStatusMapping.standInKey(for: worker.publicKey)
            }
            var info = WorkerInfo(
                publicKey: key, name: session?.name ?? worker.name, enrolled: worker.state != .revoked,
                connected: session.map { !$0.silent } ?? false, slots: session?.slots ?? worker.slots,
                running: session?.running ?? 0,
                lastSeenAtMilliseconds: worker.lastSeenAt.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) },
                quarantineRemainingMilliseconds: session?.quarantineRemaining?.wholeMilliseconds,
                quarantineReason: session?.quarantineReason, usableCores: session?.usableCores,
                threadsPerSlot: session?.threadsPerSlot, metricsEndpoint: session?.metricsEndpoint)
            if let session {
                (info.storage, info.bytesIn, info.bytesOut) = await shell.storage(of: session.identity)
            }
            infos.append(info)
        }
        return infos
    }

    private func enroll(_ enroll: EnrollWorker) async throws -> APIReply {
        let key = enroll.publicKey
        let existing = try await repository.worker(publicKey: key.z85)
        if existing?.state == .revoked {
            throw APIError(.invalidRequest, "worker key \(key) was revoked and cannot enroll again; "
                + "generate a new key pair on that worker with `splice keys generate`")
        }
        try await repository.enrollWorker(
            publicKey: key.z85, name: enroll.name ?? existing?.name ?? "worker-\(key.z85.prefix(8))",
            slots: existing?.slots ?? 1, capabilities: existing?.capabilities ?? .emptyObject)
        enrolledKeys?.enroll(key)
        logger.info("worker key enrolled", ["worker": key.z85])
        return .workerKey(WorkerKeyChanged(publicKey: key, enrolled: true))
    }

    /// Commits the revoke (which also takes back the worker's leases), then refuses the key's
    /// handshakes and messages, ends its live sessions with DISCONNECT `revoked`, and forgets them.
    private func revoke(_ key: CurvePublicKey) async throws -> APIReply {
        guard let worker = try await repository.worker(publicKey: key.z85) else {
            throw APIError(.notFound, "no worker with key \(key); `splice workers` lists them")
        }
        try await repository.revokeWorker(id: worker.id)
        enrolledKeys?.revoke(key)
        let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .revoked, detail: "key revoked"))
        let closed = await workerEndpoint.disconnect(key: key, farewell: farewell)
        await shell.workerRevoked(.key(key))
        await shell.workAvailable()
        logger.info("worker key revoked", ["worker": key.z85, "sessions_closed": closed])
        return .workerKey(WorkerKeyChanged(publicKey: key, enrolled: false, sessionsClosed: closed))
    }
}

/// Why the coordinator refuses a SUBMIT's files, with the code its ERROR carries.
private struct Refusal: Sendable {
    let code: APIError.Code
    let message: String

    init(_ code: APIError.Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
