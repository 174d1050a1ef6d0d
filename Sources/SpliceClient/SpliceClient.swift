import Foundation
import SpliceConcurrency
public import SpliceCore
public import SpliceWire

/// A client of the coordinator's API (`splice-api` 1, see docs/protocol.md): what `splice submit`,
/// `status`, `jobs`, `cancel` and `workers` use.
///
///     let client = try await SpliceClient.connect(SpliceClientConfiguration(endpoint: "tcp://10.0.0.5:7451"))
///     let job = try await client.submit(SubmitJob(input: "/media/in.mov", output: "/media/out.mp4", export: export))
///     let final = try await client.waitForCompletion(of: job) { event in … }
///     await client.close()
///
/// Every call sends its request, waits up to `attemptTimeout` for the reply, and sends it again
/// (with a fresh request id, the same body) until `timeout` has passed; a reply to any of its sends
/// is taken, replies meant for other calls are skipped. Every request is safe to repeat — SUBMIT
/// because its body carries one submission key for all of its sends. A retryable `ERROR`
/// (`unavailable`: the job store is restarting) is resent after a short backoff.
///
/// With several coordinators (`tcp://a:7451,tcp://b:7451`) the client talks to one at a time: a
/// standby answers reads itself and a write with `ERROR not-active` naming the active coordinator,
/// where the client sends it at once; a coordinator that does not answer within `attemptTimeout`,
/// or a standby that knows of no active one, makes it try the next in the list.
///
/// Errors are `SpliceClientError`s whose message is one line for people.
public actor SpliceClient {
    public nonisolated let configuration: SpliceClientConfiguration
    private let context: WireContext
    private let router = ReplyRouter()
    private var connection: ClientConnection?
    private var isClosed = false
    /// The coordinator the client talks to now: one of the list, or the active coordinator a
    /// standby named.
    private var address: String
    /// Its place in the list (the next one is tried after it).
    private var listIndex = 0

    /// Opens the connection (libzmq connects in the background; an absent coordinator shows up as
    /// `.unreachable` on the first call, not here). Fails only for an unusable endpoint.
    public static func connect(
        _ configuration: SpliceClientConfiguration
    ) async throws(SpliceClientError) -> SpliceClient {
        let client = try SpliceClient(configuration: configuration)
        _ = try await client.currentConnection()
        return client
    }

    private init(configuration: SpliceClientConfiguration) throws(SpliceClientError) {
        self.configuration = configuration
        guard let first = configuration.endpoints.first else {
            throw SpliceClientError(.invalidConfiguration, "no coordinator endpoint given; expected tcp://HOST:7451 "
                                    + "(or several, comma-separated)")
        }
        address = first
        do {
            context = try WireContext()
        } catch {
            throw SpliceClientError(.transport, "cannot start ZeroMQ: \(error.message)")
        }
    }

    // MARK: - Requests

    /// Submits a job and returns its id. A `submissionKey` is chosen here when the body has none,
    /// and the same key goes with every resend, so the coordinator creates the job once.
    public func submit(_ job: SubmitJob) async throws(SpliceClientError) -> JobID {
        var job = job
        if job.submissionKey == nil { job.submissionKey = UUID().uuidString }
        return try await send(.submit(job)) { (reply) -> JobSubmitted? in
            if case .submitted(let body) = reply { body } else { nil }
        }.job
    }

    /// One job's state and progress.
    public func status(of job: JobID) async throws(SpliceClientError) -> JobStatus {
        try await send(.status(JobStatusQuery(job: job))) { (reply) -> JobStatus? in
            if case .status(let body) = reply { body } else { nil }
        }
    }

    /// Recent jobs, newest first; only those in `state` when given.
    public func jobs(state: JobState? = nil, limit: Int? = nil) async throws(SpliceClientError) -> [JobStatus] {
        try await send(.list(ListJobs(state: state, limit: limit))) { (reply) -> JobList? in
            if case .jobs(let body) = reply { body } else { nil }
        }.jobs
    }

    /// Cancels a job; the answer carries its state afterwards (a finished job keeps its own).
    public func cancel(_ job: JobID) async throws(SpliceClientError) -> JobCancelled {
        try await send(.cancel(CancelJob(job: job))) { (reply) -> JobCancelled? in
            if case .cancelled(let body) = reply { body } else { nil }
        }
    }

    /// The workers the coordinator knows.
    public func workers() async throws(SpliceClientError) -> [WorkerInfo] {
        try await send(.workers(ListWorkers())) { (reply) -> WorkerList? in
            if case .workers(let body) = reply { body } else { nil }
        }.workers
    }

    /// Admits a worker key.
    public func enroll(_ key: CurvePublicKey, name: String? = nil) async throws(SpliceClientError) -> WorkerKeyChanged {
        try await changeKey(.enroll(EnrollWorker(publicKey: key, name: name)))
    }

    /// Refuses a worker key from now on and ends its live sessions.
    public func revoke(_ key: CurvePublicKey) async throws(SpliceClientError) -> WorkerKeyChanged {
        try await changeKey(.revoke(RevokeWorker(publicKey: key)))
    }

    /// Makes a bearer token for the HTTP API; the answer carries the token, the only time it is shown.
    public func createToken(_ request: CreateToken) async throws(SpliceClientError) -> TokenChanged {
        try await send(.createToken(request)) { (reply) -> TokenChanged? in
            if case .token(let body) = reply { body } else { nil }
        }
    }

    /// The live tokens (never the tokens themselves).
    public func tokens() async throws(SpliceClientError) -> [TokenInfo] {
        try await send(.tokens(ListTokens())) { (reply) -> TokenList? in
            if case .tokens(let body) = reply { body } else { nil }
        }.tokens
    }

    /// Refuses the live token named `name` from now on.
    public func revokeToken(named name: String) async throws(SpliceClientError) -> TokenChanged {
        try await send(.revokeToken(RevokeToken(name: name))) { (reply) -> TokenChanged? in
            if case .token(let body) = reply { body } else { nil }
        }
    }

    /// Makes a worker join token (shown once, in the answer).
    public func createJoinToken(_ request: CreateJoinToken) async throws(SpliceClientError) -> JoinTokenChanged {
        try await send(.createJoinToken(request)) { (reply) -> JoinTokenChanged? in
            if case .joinToken(let body) = reply { body } else { nil }
        }
    }

    /// The live join tokens (never the tokens themselves).
    public func joinTokens() async throws(SpliceClientError) -> [JoinTokenInfo] {
        try await send(.joinTokens(ListJoinTokens())) { (reply) -> JoinTokenList? in
            if case .joinTokens(let body) = reply { body } else { nil }
        }.tokens
    }

    /// Refuses the live join token named `name` from now on.
    public func revokeJoinToken(named name: String) async throws(SpliceClientError) -> JoinTokenChanged {
        try await send(.revokeJoinToken(RevokeJoinToken(name: name))) { (reply) -> JoinTokenChanged? in
            if case .joinToken(let body) = reply { body } else { nil }
        }
    }

    /// Revokes (or, dry, lists) the workers not heard from for `notSeenSeconds`.
    public func pruneWorkers(_ request: PruneWorkers) async throws(SpliceClientError) -> WorkersPruned {
        try await send(.pruneWorkers(request)) { (reply) -> WorkersPruned? in
            if case .workersPruned(let body) = reply { body } else { nil }
        }
    }

    /// Deletes (or, dry, counts) the jobs that finished before the cutoff.
    public func pruneJobs(_ request: PruneJobs) async throws(SpliceClientError) -> JobsPruned {
        try await send(.pruneJobs(request)) { (reply) -> JobsPruned? in
            if case .jobsPruned(let body) = reply { body } else { nil }
        }
    }

    private func changeKey(_ request: APIRequest) async throws(SpliceClientError) -> WorkerKeyChanged {
        try await send(request) { (reply) -> WorkerKeyChanged? in
            if case .workerKey(let body) = reply { body } else { nil }
        }
    }

    /// Replies that arrived for no waiting call (answers to sends a call had given up on).
    public var skippedReplies: Int { router.skippedReplies }

    // MARK: - Connection

    /// Closes the connection. Later calls fail with `.transport`.
    public func close() async {
        isClosed = true
        await connection?.close()
        connection = nil
        await context.terminate()
    }

    /// Drops the connection and opens a fresh one: after the coordinator restarted, a new socket
    /// connects at once instead of waiting out libzmq's reconnect backoff.
    func reconnect() async throws(SpliceClientError) {
        let old = connection
        connection = nil
        await old?.close()
        _ = try await currentConnection()
    }

    private func currentConnection() async throws(SpliceClientError) -> ClientConnection {
        guard !isClosed else { throw SpliceClientError(.transport, "the client is closed") }
        if let connection { return connection }
        let opened = try await ClientConnection.open(address, configuration: configuration, context: context,
                                                     router: router)
        connection = opened
        return opened
    }

    /// The coordinator the client talks to now.
    public var currentEndpoint: String { address }

    /// Talks to `next` from now on (a fresh connection).
    private func move(to next: String) async {
        guard next != address else { return }
        let old = connection
        connection = nil
        address = next
        if let index = configuration.endpoints.firstIndex(of: next) { listIndex = index }
        await old?.close()
    }

    /// Talks to the next coordinator of the list from now on; false when there is only one.
    private func moveToNext() async -> Bool {
        let list = configuration.endpoints
        guard list.count > 1 else { return false }
        let current = list.firstIndex(of: address) ?? listIndex
        await move(to: list[(current + 1) % list.count])
        return true
    }

    // MARK: - One call

    /// Sends `request` until a reply arrives or `timeout` passes and returns the reply's body
    /// (`Body`, as `extract` finds it); throws `.rejected` for an `ERROR`, `.unexpectedReply` for
    /// any other type.
    private func send<Body: MessageBody>(
        _ request: APIRequest, _ extract: (APIReply) -> Body?
    ) async throws(SpliceClientError) -> Body {
        let reply = try await exchange(request)
        if case .error(let error) = reply { throw SpliceClientError.rejected(error) }
        guard let body = extract(reply) else {
            let sent = Swift.type(of: request.body).messageType
            let received = Swift.type(of: reply.body).messageType
            throw SpliceClientError(
                .unexpectedReply, "the coordinator at \(address) answered \(sent) with \(received) instead of "
                    + "\(Body.messageType); are `splice` and the coordinator the same version?")
        }
        return body
    }

    /// The reply to `request` (possibly a non-retryable ERROR), resending as the type comment says.
    private func exchange(_ request: APIRequest) async throws(SpliceClientError) -> APIReply {
        let clock = ContinuousClock()
        let deadline = clock.now + configuration.timeout
        let mailbox = ReplyMailbox()
        var ids: [String] = []
        defer { router.forget(ids) }
        var retryableErrors = 0
        var redirects = 0
        // The coordinator's own word on why it could not serve the request (its job store is
        // down), which says more at the deadline than "it did not answer".
        var lastRetryable: APIReply?
        while true {
            if Task.isCancelled { throw SpliceClientError.cancelledError }
            let connection = try await currentConnection()
            if let refusal = connection.refusal { throw refusal }
            let id = UUID().uuidString
            ids.append(id)
            router.expect(id, in: mailbox)
            do {
                try await connection.endpoint.send(request, requestID: id)
            } catch where error.code == .encoding || error.code == .messageTooLarge {
                throw SpliceClientError(.transport, "cannot send the request: \(error.message)")
            } catch {
                // Queue full or socket replaced: wait out this attempt and send again.
            }
            let remaining = deadline - clock.now
            if let result = await mailbox.next(within: min(configuration.attemptTimeout, max(remaining, .zero))) {
                let reply = try result.get()
                if case .error(let error) = reply, error.code == .notActive {
                    // A standby: to the active coordinator it names, at once (a few times per call,
                    // in case two coordinators name each other during a take-over); else the next.
                    lastRetryable = reply
                    redirects += 1
                    if let active = error.active, active != address, redirects <= 5 {
                        await move(to: active)
                        continue
                    }
                    if error.active == nil, !error.isRetryable { return reply }
                    _ = await moveToNext()
                    retryableErrors += 1
                    let pause = configuration.retryBackoff.delay(attempt: retryableErrors)
                    guard clock.now + pause < deadline else { return reply }
                    do { try await Task.sleep(for: pause) } catch { throw SpliceClientError.cancelledError }
                    continue
                }
                guard case .error(let error) = reply, error.isRetryable else { return reply }
                retryableErrors += 1
                lastRetryable = reply
                let pause = configuration.retryBackoff.delay(attempt: retryableErrors)
                guard clock.now + pause < deadline else { return reply }
                do { try await Task.sleep(for: pause) } catch { throw SpliceClientError.cancelledError }
                continue
            }
            if Task.isCancelled { throw SpliceClientError.cancelledError }
            if clock.now >= deadline {
                if let lastRetryable { return lastRetryable }
                throw connection.unreachableError(after: configuration.timeout)
            }
            // No answer from this one: the next coordinator of the list, if there is one.
            _ = await moveToNext()
        }
    }

    /// `10s`, `1.5s`, `250ms`: a duration as the messages show it.
    nonisolated static func text(_ duration: Duration) -> String {
        let milliseconds = duration.wholeMilliseconds
        if milliseconds < 1000 { return "\(milliseconds)ms" }
        var fraction = String(milliseconds % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(milliseconds / 1000)" + (fraction.isEmpty ? "" : "." + fraction) + "s"
    }
}
