import Foundation
import Glibc
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceWire

/// Answers the client API (`splice submit/status/jobs/cancel/workers/tokens`). Every request is
/// safe to repeat: SUBMIT is keyed by its submission key, CANCEL/ENROLL/REVOKE/TOKEN_REVOKE are
/// idempotent in the store, and the others only read (a TOKEN_CREATE repeated after its answer
/// was lost finds the name taken: `conflict`). Each request needs its scope (`APIRequest.scope`):
/// a key the `--admin-keys` file limits to some scopes is refused the others (`forbidden`).
///
/// The active coordinator answers everything through its term (the epoch's fenced pool, the live
/// sessions, the term's ``JobSubmissions``). A standby answers the reads (STATUS, LIST, WORKERS,
/// TOKENS) from the database and every write with `ERROR not-active` naming the active
/// coordinator's API endpoint, which the client follows (docs/coordinator.md, Standby coordinators).
final class ClientAPIHandler: Sendable {
    private let role: CoordinatorRole
    /// The read-only pool a standby answers from.
    private let reads: JobRepository
    private let workerEndpoint: CoordinatorWorkerEndpoint
    /// The worker keys the ZAP handler admits; nil without CURVE.
    private let enrolledKeys: EnrolledKeys?
    /// This coordinator's name, for the `not-active` answer.
    private let name: String
    private let logger: Logger
    private let inputRoots: PathRoots
    private let outputRoots: PathRoots
    /// Told the hash of a token revoked here (the HTTP API forgets it at once).
    private let tokenRevoked: @Sendable (SHA256Digest) -> Void

    init(
        role: CoordinatorRole, reads: JobRepository, workerEndpoint: CoordinatorWorkerEndpoint,
        enrolledKeys: EnrolledKeys?, name: String, inputRoots: PathRoots, outputRoots: PathRoots,
        tokenRevoked: @escaping @Sendable (SHA256Digest) -> Void = { _ in }, logger: Logger
    ) {
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.role = role
        self.reads = reads
        self.workerEndpoint = workerEndpoint
        self.enrolledKeys = enrolledKeys
        self.name = name
        self.tokenRevoked = tokenRevoked
        self.logger = logger
    }

    /// The active term, or the `not-active` refusal of a write.
    private func activeTerm() throws -> CoordinatorTerm {
        guard let term = role.term else { throw notActive() }
        return term
    }

    /// The store a read goes to: the active term's pool, or a standby's read-only one.
    private var readRepository: JobRepository { role.term?.repository ?? reads }

    /// `ERROR not-active`: where the active coordinator is, when one is.
    private func notActive() -> APIError {
        if let active = role.leader?.active, active.holder != nil, let api = active.apiEndpoint {
            return APIError(
                .notActive, "this coordinator (\(name)) is a standby; the active coordinator is "
                    + "\(active.holderName ?? "unnamed") at \(api) (epoch \(active.epoch))", active: api)
        }
        return APIError(
            .notActive, "this coordinator (\(name)) is a standby and no coordinator is active right now (one is taking "
                + "over, or the database does not answer); try again", isRetryable: true)
    }

    /// How long a read waits on the store before it answers `unavailable`: less than a client's
    /// attempt timeout, so during a database outage `splice status` and `submit --wait` hear that
    /// the store is down instead of concluding that the coordinator is.
    static let readStoreWait: Duration = .seconds(4)

    /// The reply to `request` from a client whose key has `scopes`; never throws — failures become
    /// `ERROR`.
    func reply(to request: APIRequest, scopes: Set<APIScope> = Set(APIScope.allCases)) async -> APIReply {
        guard scopes.contains(request.scope) else {
            return .error(APIError(.forbidden, "this client's key has the scopes " + APIScope.list(scopes) + "; "
                + type(of: request.body).messageType + " needs \(request.scope.rawValue) (--admin-keys)"))
        }
        switch request {
        case .status, .list, .workers, .tokens:
            let answer = await withDeadline(Self.readStoreWait) { await self.answer(request) }
            return answer ?? .error(APIError(
                .unavailable, "the job store is not answering (is PostgreSQL up?); try again", isRetryable: true))
        case .joinTokens:
            let answer = await withDeadline(Self.readStoreWait) { await self.answer(request) }
            return answer ?? .error(APIError(
                .unavailable, "the job store is not answering (is PostgreSQL up?); try again", isRetryable: true))
        case .submit, .cancel, .enroll, .revoke, .createToken, .revokeToken, .createJoinToken, .revokeJoinToken,
             .pruneWorkers, .pruneJobs:
            return await answer(request)
        }
    }

    private func answer(_ request: APIRequest) async -> APIReply {
        do {
            switch request {
            case .submit(let submit): return try await self.submit(submit)
            case .status(let query): return .status(try await status(of: query.job))
            case .list(let list): return try await self.list(list)
            case .cancel(let cancel): return .cancelled(try await self.cancel(cancel.job))
            case .workers: return .workers(WorkerList(workers: try await workerInfos()))
            case .enroll(let enroll): return try await self.enroll(enroll)
            case .revoke(let revoke): return try await self.revoke(revoke.publicKey)
            case .createToken(let create): return .token(try await createToken(create))
            case .tokens: return .tokens(TokenList(tokens: try await readRepository.tokens().map(Self.info)))
            case .revokeToken(let revoke): return .token(try await revokeToken(named: revoke.name))
            case .createJoinToken(let create): return .joinToken(try await createJoinToken(create))
            case .joinTokens:
                return .joinTokens(JoinTokenList(tokens: try await readRepository.joinTokens().map(Self.info)))
            case .revokeJoinToken(let revoke): return .joinToken(try await revokeJoinToken(named: revoke.name))
            case .pruneWorkers(let prune): return .workersPruned(try await pruneWorkers(prune))
            case .pruneJobs(let prune): return .jobsPruned(try await pruneJobs(prune))
            }
        } catch let error as APIError {
            return .error(error)
        } catch let error as StoreError where error.code == .fenced {
            // The term ended under the request: another coordinator took over.
            return .error(notActive())
        } catch is CancellationError {
            return .error(APIError(.unavailable, "the coordinator is changing roles; try again", isRetryable: true))
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
        let term = try activeTerm()
        do {
            let (job, _) = try await term.submissions.submit(JobSubmissionRequest(
                input: submit.input, output: submit.output, settings: submit.export, settingsField: "export",
                priority: submit.priority ?? 0, key: submit.submissionKey, keyField: "submissionKey"))
            return .submitted(JobSubmitted(job: job.id))
        } catch {
            throw error.apiError
        }
    }

    private func status(of job: JobID) async throws -> JobStatus {
        let term = role.term
        let repository = term?.repository ?? reads
        guard let stored = try await repository.job(id: job) else { throw notFound(job) }
        let waiting = stored.state == .running ? try await repository.waitingReason(ofJob: job) : nil
        let progress = try await repository.progress(ofJobs: [job])[job]
        let segments = try await repository.segmentReports(ofJob: job)
        let running = await term?.shell.runningProgress(ofJob: job) ?? RunningProgress([])
        return JobStatusMapping.status(of: stored, running: running, progress: progress, waiting: waiting,
                                       segments: segments)
    }

    private func list(_ list: ListJobs) async throws -> APIReply {
        let states = list.state.map { [$0] } ?? JobState.allCases
        // `limit` is within WireLimits.listLimit (1…1000) or the request never got here.
        let limit = list.limit ?? 50
        let term = role.term
        let repository = term?.repository ?? reads
        // The store lists by priority and age; the API shows the newest first.
        let jobs = try await repository.jobs(in: states, limit: 10_000)
            .sorted { $0.createdAt > $1.createdAt }.prefix(limit)
        let progress = try await repository.progress(ofJobs: jobs.map(\.id))
        var statuses: [JobStatus] = []
        for job in jobs {
            let running = await term?.shell.runningProgress(ofJob: job.id) ?? RunningProgress([])
            statuses.append(JobStatusMapping.status(of: job, running: running, progress: progress[job.id]))
        }
        return .jobs(JobList(jobs: statuses))
    }

    /// Cancels `job` (ends its attempts and removes its files); a finished job keeps its state.
    func cancel(_ job: JobID) async throws -> JobCancelled {
        let term = try activeTerm()
        let repository = term.repository
        let stored: Job
        do {
            stored = try await repository.cancelJob(jobID: job, reason: "cancelled on request")
        } catch let error as StoreError where error.code == .notFound {
            throw notFound(job)
        } catch let error as StoreError where error.code == .invalidTransition {
            // Already finished: it keeps its state.
            guard let finished = try await repository.job(id: job) else { throw notFound(job) }
            return JobCancelled(job: job, state: finished.state)
        }
        if stored.state == .cancelled {
            logger.info("job cancelled", ["job": job.description])
            await term.shell.jobEnded(job, reason: .jobCancelled)
        }
        return JobCancelled(job: job, state: stored.state)
    }

    private func notFound(_ job: JobID) -> APIError {
        APIError(.notFound, "no job \(job); `splice jobs` lists the known ones")
    }

    // MARK: - Workers

    /// Every enrolled worker key, with its live session.
    func workerInfos() async throws -> [WorkerInfo] {
        let term = role.term
        let repository = term?.repository ?? reads
        let sessions = await term?.shell.sessions ?? []
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
                threadsPerSlot: session?.threadsPerSlot, metricsEndpoint: session?.metricsEndpoint,
                protocolVersion: session?.protocolVersion)
            if let session, let shell = term?.shell {
                (info.storage, info.bytesIn, info.bytesOut) = await shell.storage(of: session.identity)
            }
            infos.append(info)
        }
        return infos
    }

    private func enroll(_ enroll: EnrollWorker) async throws -> APIReply {
        let repository = try activeTerm().repository
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
        let term = try activeTerm()
        let repository = term.repository
        guard let worker = try await repository.worker(publicKey: key.z85) else {
            throw APIError(.notFound, "no worker with key \(key); `splice workers` lists them")
        }
        try await repository.revokeWorker(id: worker.id)
        enrolledKeys?.revoke(key)
        let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .revoked, detail: "key revoked"))
        // In the version the worker's session speaks, so a worker of the previous release reads it too.
        let closed = await workerEndpoint.disconnect(key: key, farewell: farewell,
                                                     version: await term.shell.protocolVersion(of: .key(key)))
        await term.shell.workerRevoked(.key(key))
        await term.shell.workAvailable()
        logger.info("worker key revoked", ["worker": key.z85, "sessions_closed": closed])
        return .workerKey(WorkerKeyChanged(publicKey: key, enrolled: false, sessionsClosed: closed))
    }

    // MARK: - Tokens

    /// Makes a token: checks the request, draws the token, stores its hash. The roots must be folders
    /// on this machine, inside the coordinator's own roots when it has any.
    /// Written by the active coordinator only (like every write of the API), through its term's
    /// pool; `api_tokens` itself is not fenced (docs/coordinator.md, The fence).
    private func createToken(_ create: CreateToken) async throws -> TokenChanged {
        let repository = try activeTerm().repository
        guard create.name.utf8.count <= 64, let first = create.name.unicodeScalars.first,
              create.name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                  || "._-".unicodeScalars.contains($0)) }),
              first.properties.isAlphabetic || ("0"..."9").contains(first)
        else {
            throw APIError(.invalidRequest, "`name` must be 1 to 64 letters, digits, `.`, `_` or `-`, starting with a "
                + "letter or digit")
        }
        guard !create.scopes.isEmpty else { throw APIError(.invalidRequest, "`scopes` names no scope") }
        if let rate = create.rateLimit, !(1...1_000_000).contains(rate) {
            throw APIError(.invalidRequest, "`rateLimit` must be from 1 to 1000000 requests a second")
        }
        if let seconds = create.expiresInSeconds, !(1...(3650 * 86_400)).contains(seconds) {
            throw APIError(.invalidRequest, "`expiresInSeconds` must be from 1 s to 10 years")
        }
        let inputs = try await resolvedRoots(create.inputRoots ?? [], field: "inputRoots", within: inputRoots)
        let outputs = try await resolvedRoots(create.outputRoots ?? [], field: "outputRoots", within: outputRoots)
        let token = TokenAuthority.generate()
        let record: APITokenRecord
        do {
            record = try await repository.createToken(APITokenRequest(
                name: create.name, tokenHash: TokenAuthority.hash(of: token), scopes: Set(create.scopes),
                inputRoots: inputs, outputRoots: outputs, rateLimit: create.rateLimit,
                expiresAt: create.expiresInSeconds.map { Date().addingTimeInterval(Double($0)) }))
        } catch let error as StoreError where error.code == .conflict {
            throw APIError(.conflict, "a token named \(create.name) exists; revoke it first (`splice tokens revoke "
                + "\(create.name)`) or choose another name")
        }
        logger.info("token created", ["token": record.name, "scopes": APIScope.list(record.scopes)])
        return TokenChanged(token: token, info: Self.info(record))
    }

    private func revokeToken(named name: String) async throws -> TokenChanged {
        let repository = try activeTerm().repository
        guard let record = try await repository.revokeToken(named: name) else {
            throw APIError(.notFound, "no live token named \(name.prefix(64)); `splice tokens list` lists them")
        }
        tokenRevoked(record.tokenHash)
        logger.info("token revoked", ["token": record.name])
        return TokenChanged(info: Self.info(record))
    }

    /// Each of `paths` resolved (links followed); it must be a folder inside `within` (when set).
    private func resolvedRoots(_ paths: [String], field: String, within: PathRoots) async throws -> [String] {
        try await FileSystemQueue.run {
            try paths.map { path -> String in
                guard path.hasPrefix("/"), let real = PathRoots.realPath(path) else {
                    throw APIError(.invalidRequest, "`\(field)` \(path) is not an absolute path to a folder the "
                        + "coordinator sees")
                }
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw APIError(.invalidRequest, "`\(field)` \(path) is not a folder")
                }
                guard within.contains(resolved: real) else {
                    throw APIError(.invalidRequest, "`\(field)` \(path) is outside the coordinator's own roots ("
                        + within.roots.joined(separator: ", ") + ")")
                }
                return real
            }
        }
    }

    // MARK: - Join tokens and pruning

    /// Makes a join token: the name checked, the token drawn, its hash stored.
    private func createJoinToken(_ create: CreateJoinToken) async throws -> JoinTokenChanged {
        let repository = try activeTerm().repository
        try Self.checkName(create.name)
        guard (1...1_000_000).contains(create.uses) else {
            throw APIError(.invalidRequest, "`uses` must be from 1 to 1000000 workers")
        }
        guard (1...(3650 * 86_400)).contains(create.ttlSeconds) else {
            throw APIError(.invalidRequest, "`ttlSeconds` must be from 1 s to 10 years")
        }
        let token = JoinTokenSecret.generate()
        let record: JoinTokenRecord
        do {
            record = try await repository.createJoinToken(
                name: create.name, tokenHash: JoinTokenSecret.hash(of: token), uses: create.uses,
                lifetime: .seconds(create.ttlSeconds))
        } catch let error as StoreError where error.code == .conflict {
            throw APIError(.conflict, "a join token named \(create.name) exists; revoke it first (`splice workers "
                + "join-token revoke \(create.name)`) or choose another name")
        }
        logger.info("join token created", ["token": record.name, "uses": record.uses,
                                           "ttl_s": create.ttlSeconds])
        return JoinTokenChanged(token: token, info: Self.info(record))
    }

    private func revokeJoinToken(named name: String) async throws -> JoinTokenChanged {
        let repository = try activeTerm().repository
        guard let record = try await repository.revokeJoinToken(named: name) else {
            throw APIError(.notFound, "no live join token named \(name.prefix(64)); `splice workers join-token list` "
                + "lists them")
        }
        logger.info("join token revoked", ["token": record.name, "uses_left": record.usesLeft])
        return JoinTokenChanged(info: Self.info(record))
    }

    /// Revokes the workers gone for the given time, as `revoke` does one: the store first (their
    /// leases back), then their keys refused and any live session ended.
    private func pruneWorkers(_ prune: PruneWorkers) async throws -> WorkersPruned {
        let term = try activeTerm()
        guard (60...(3650 * 86_400)).contains(prune.notSeenSeconds) else {
            throw APIError(.invalidRequest, "`notSeenSeconds` must be from 60 s to 10 years")
        }
        let workers = try await term.repository.pruneWorkers(notSeenFor: .seconds(prune.notSeenSeconds),
                                                             dryRun: prune.dryRun)
        if !prune.dryRun {
            for worker in workers {
                guard let key = try? CurvePublicKey(z85: worker.publicKey) else { continue }
                enrolledKeys?.revoke(key)
                let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .revoked, detail: "key pruned"))
                await workerEndpoint.disconnect(key: key, farewell: farewell)
                await term.shell.workerRevoked(.key(key))
            }
            if !workers.isEmpty { await term.shell.workAvailable() }
            logger.info("workers pruned", ["count": workers.count, "not_seen_s": prune.notSeenSeconds])
        }
        return WorkersPruned(workers: workers.map { worker in
            WorkersPruned.Pruned(publicKey: worker.publicKey, name: worker.name,
                                 lastSeenAtMilliseconds: JobStatusMapping.milliseconds(
                                     worker.lastSeenAt ?? worker.enrolledAt))
        }, dryRun: prune.dryRun)
    }

    private func pruneJobs(_ prune: PruneJobs) async throws -> JobsPruned {
        let term = try activeTerm()
        guard (1...(3650 * 86_400)).contains(prune.finishedBeforeSeconds) else {
            throw APIError(.invalidRequest, "`finishedBeforeSeconds` must be from 1 s to 10 years")
        }
        let report = try await term.pruner.prune(finishedBefore: .seconds(prune.finishedBeforeSeconds),
                                                 dryRun: prune.dryRun)
        return JobsPruned(jobs: report.jobs.count, segments: report.segments, events: report.events,
                          webhookEvents: report.webhookEvents, dryRun: prune.dryRun)
    }

    /// A token's name: 1 to 64 of `A–Z a–z 0–9 . _ -`, starting with a letter or digit.
    private static func checkName(_ name: String) throws {
        guard name.utf8.count <= 64, let first = name.unicodeScalars.first,
              name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                  || "._-".unicodeScalars.contains($0)) }),
              first.properties.isAlphabetic || ("0"..."9").contains(first)
        else {
            throw APIError(.invalidRequest, "`name` must be 1 to 64 letters, digits, `.`, `_` or `-`, starting with a "
                + "letter or digit")
        }
    }

    static func info(_ record: JoinTokenRecord) -> JoinTokenInfo {
        JoinTokenInfo(name: record.name, uses: record.uses, usesLeft: record.usesLeft,
                      createdAtMilliseconds: JobStatusMapping.milliseconds(record.createdAt),
                      expiresAtMilliseconds: JobStatusMapping.milliseconds(record.expiresAt),
                      revokedAtMilliseconds: record.revokedAt.map(JobStatusMapping.milliseconds))
    }

    static func info(_ record: APITokenRecord) -> TokenInfo {
        TokenInfo(name: record.name, scopes: record.scopes.sorted(), inputRoots: record.inputRoots,
                  outputRoots: record.outputRoots, rateLimit: record.rateLimit,
                  createdAtMilliseconds: JobStatusMapping.milliseconds(record.createdAt),
                  expiresAtMilliseconds: record.expiresAt.map(JobStatusMapping.milliseconds),
                  revokedAtMilliseconds: record.revokedAt.map(JobStatusMapping.milliseconds))
    }
}
