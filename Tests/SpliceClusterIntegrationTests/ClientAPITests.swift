import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceClient

/// `SpliceClient` against a scripted API server over real ZeroMQ on loopback.
@Suite("SpliceClient against a scripted coordinator", .timeLimit(.minutes(1)))
struct ClientAPITests {
    /// Short waits, so a lost reply costs the tests fractions of a second.
    static func configuration(_ endpoint: String, timeout: Duration = .seconds(30)) -> SpliceClientConfiguration {
        SpliceClientConfiguration(
            endpoint: endpoint, timeout: timeout, attemptTimeout: .milliseconds(200),
            retryBackoff: Backoff(base: .milliseconds(20), cap: .milliseconds(100)),
            reconnectBackoff: Backoff(base: .milliseconds(50), cap: .milliseconds(200)))
    }

    static let submission = SubmitJob(input: "/in.mov", output: "/out.mp4", export: JSONPayload(.object(["segmentDuration": .null])))

    @Test("a resend carries the same submission key under a fresh request id")
    func resendKeepsTheKey() async throws {
        let server = try await ScriptedAPIServer.start { _, index in
            index == 0 ? [] : [.reply(.submitted(JobSubmitted(job: .numbered(1))))]  // the first SUBMIT is lost
        }
        try await withClient(of: server) { client in
            let job = try await client.submit(Self.submission)
            #expect(job == .numbered(1))
            // Two sends at least (a loaded machine may make the client resend more often).
            let sent = server.requests
            let submits = sent.compactMap { envelope -> SubmitJob? in
                if case .submit(let job) = envelope.message { job } else { nil }
            }
            #expect(sent.count >= 2 && submits.count == sent.count, "expected SUBMITs only, got \(sent.map(\.message))")
            #expect(submits.first?.submissionKey != nil)
            #expect(submits.allSatisfy { $0 == submits.first })
            #expect(Set(sent.map(\.requestID)).count == sent.count)
        }
    }

    @Test("a late reply to an earlier send still answers the call")
    func lateReply() async throws {
        let server = try await ScriptedAPIServer.start { request, index in
            guard case .status(let query) = request else { return [] }
            // Only the first send is answered, and only after the client has sent again.
            return index == 0 ? [.delayed(.status(.scripted(query.job, .running)), by: .milliseconds(500))] : []
        }
        try await withClient(of: server) { client in
            let status = try await client.status(of: .numbered(2))
            #expect(status.job == .numbered(2))
            #expect(server.requests.count >= 2)
        }
    }

    @Test("replies carrying another request's id are skipped")
    func foreignReplies() async throws {
        let server = try await ScriptedAPIServer.start { request, _ in
            guard case .status(let query) = request else { return [] }
            return [
                .replyAs(.status(.scripted(.numbered(98), .failed)), id: "not-yours"),
                .replyAs(.error(APIError(APIError.Code(rawValue: "late"), "an old answer")), id: "older"),
                .reply(.status(.scripted(query.job, .running, done: 1, total: 3))),
            ]
        }
        try await withClient(of: server) { client in
            let status = try await client.status(of: .numbered(3))
            #expect(status == .scripted(.numbered(3), .running, done: 1, total: 3))
            // At least the two foreign replies (a loaded machine may make the client resend and see more).
            #expect(await eventually { await client.skippedRepliesNow() >= 2 })
        }
    }

    @Test("waitForCompletion rides out the coordinator going away and coming back on the same port")
    func waitSurvivesRestart() async throws {
        let job = JobID.numbered(4)
        let first = try await ScriptedAPIServer.start { _, _ in
            [.reply(.status(.scripted(job, .running, done: 1, total: 3)))]
        }
        let endpoint = first.endpoint
        let client = try await SpliceClient.connect(Self.configuration(endpoint, timeout: .milliseconds(400)))
        let events = Recorder<JobWaitEvent>()
        let waiting = Task {
            try await client.waitForCompletion(of: job, pollInterval: .milliseconds(50)) { events.append($0) }
        }
        #expect(await eventually { !events.entries.isEmpty })
        await first.stop()
        #expect(await eventually { events.entries.contains { if case .unreachable = $0 { true } else { false } } })

        let second = try await ScriptedAPIServer.start(on: endpoint) { _, index in
            [.reply(.status(index < 2 ? .scripted(job, .running, done: 2, total: 3)
                                      : .scripted(job, .succeeded, done: 3, total: 3)))]
        }
        let final = try #require(await withDeadline(.seconds(20)) { try? await waiting.value })
        #expect(final.state == .succeeded)
        let seen = events.entries
        let firstOutage = try #require(seen.firstIndex { if case .unreachable = $0 { true } else { false } })
        let back = try #require(seen.firstIndex(of: .reachable))
        #expect(firstOutage < back)
        #expect(seen[..<firstOutage].allSatisfy { $0 == .status(.scripted(job, .running, done: 1, total: 3)) })
        #expect(seen.last == .status(.scripted(job, .succeeded, done: 3, total: 3)))
        guard case .unreachable(let error) = seen[firstOutage] else { return }
        #expect(error.code == .unreachable)
        #expect(error.isRetryable)
        // Refused connection or (on a loaded machine) a reply later than 400 ms: either way one line naming the endpoint.
        #expect(error.message == "no coordinator answered at \(endpoint); is `splice coordinator` running?"
                || error.message.hasPrefix("the coordinator at \(endpoint) did not answer within 400ms;"))
        #expect(!second.requests.isEmpty)
        await client.close()
        await second.stop()
    }

    @Test("nobody listening: one line naming the endpoint")
    func unreachable() async throws {
        let endpoint = "tcp://127.0.0.1:\(try unusedPort())"
        let client = try await SpliceClient.connect(Self.configuration(endpoint, timeout: .milliseconds(300)))
        let error = await clientError { _ = try await client.jobs() }
        #expect(error?.code == .unreachable)
        #expect(error?.isRetryable == true)
        #expect(error?.message == "no coordinator answered at \(endpoint); is `splice coordinator` running?")
        await client.close()
    }

    @Test("a listener that never answers: one line saying so")
    func silent() async throws {
        let server = try await ScriptedAPIServer.start { _, _ in [] }
        try await withClient(of: server, timeout: .milliseconds(500)) { client in
            let error = await clientError { _ = try await client.workers() }
            #expect(error?.code == .unreachable)
            #expect(error?.message.hasPrefix(
                "the coordinator at \(server.endpoint) did not answer within 500ms;") == true)
            #expect(error?.message.contains("\n") == false)
        }
    }

    @Test("the coordinator's ERROR becomes one line; a retryable one is sent again")
    func errors() async throws {
        let workersAsked = Recorder<Int>()  // the first WORKERS is refused, whatever was resent before it
        let server = try await ScriptedAPIServer.start { request, _ in
            switch request {
            case .status:
                let lines = "no job job-0\n  `splice jobs` lists them"
                return [.reply(.error(APIError(.notFound, lines)))]
            case .cancel:
                return [.reply(.submitted(JobSubmitted(job: .numbered(0))))]
            case .workers:
                workersAsked.append(1)
                guard workersAsked.entries.count > 1 else {
                    return [.reply(.error(APIError(.unavailable, "the job store is unreachable; try again",
                                                   isRetryable: true)))]
                }
                return [.reply(.workers(WorkerList(workers: [])))]
            default:
                return []
            }
        }
        try await withClient(of: server) { client in
            let notFound = await clientError { _ = try await client.status(of: .numbered(0)) }
            #expect(notFound?.code == .rejected)
            #expect(notFound?.apiError?.code == .notFound)
            #expect(notFound?.message == "no job job-0; `splice jobs` lists them")

            let wrongType = await clientError { _ = try await client.cancel(.numbered(0)) }
            #expect(wrongType?.code == .unexpectedReply)
            #expect(wrongType?.message
                == "the coordinator at \(server.endpoint) answered CANCEL with SUBMITTED instead of "
                    + "CANCELLED; are `splice` and the coordinator the same version?")

            let before = server.requests.count
            let workers = try await client.workers()
            #expect(workers.isEmpty)
            #expect(server.requests.count - before >= 2)  // one `unavailable`, then the answer (more if a send timed out)
        }
    }

    @Test("waitForCompletion stops at errors a retry cannot cure, and when cancelled")
    func waitStops() async throws {
        let server = try await ScriptedAPIServer.start { request, _ in
            guard case .status(let query) = request else { return [] }
            if query.job == .numbered(99) { return [.reply(.error(APIError(.notFound, "no job gone")))] }
            return [.reply(.status(.scripted(query.job, .running, done: 0, total: 2)))]
        }
        try await withClient(of: server) { client in
            let gone = await clientError {
                _ = try await client.waitForCompletion(of: .numbered(99), pollInterval: .milliseconds(20))
            }
            #expect(gone?.code == .rejected)

            let polls = Recorder<JobWaitEvent>()
            let waiting = Task {
                try await client.waitForCompletion(of: .numbered(97), pollInterval: .milliseconds(20)) { polls.append($0) }
            }
            #expect(await eventually { polls.entries.count >= 2 })
            waiting.cancel()
            let outcome = await withDeadline(.seconds(5)) { await waiting.result }
            guard case .failure(let error as SpliceClientError)? = outcome else {
                Issue.record("expected a cancelled wait, got \(String(describing: outcome))")
                return
            }
            #expect(error.code == .cancelled)
        }
    }

    @Test("CURVE: an admitted client key is answered, any other is refused at once")
    func curve() async throws {
        let serverKeys = try CurveKeyPair.generate()
        let admitted = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let server = try await ScriptedAPIServer.start(curve: (serverKeys, [admitted.publicKey])) { _, _ in
            [.reply(.workers(WorkerList(workers: [])))]
        }
        var good = Self.configuration(server.endpoint)
        good.security = .curve(clientKeys: admitted, serverKey: serverKeys.publicKey)
        let client = try await SpliceClient.connect(good)
        #expect(try await client.workers().isEmpty)
        await client.close()

        var bad = Self.configuration(server.endpoint, timeout: .seconds(20))
        bad.security = .curve(clientKeys: stranger, serverKey: serverKeys.publicKey)
        let refusedClient = try await SpliceClient.connect(bad)
        let started = ContinuousClock.now
        let refused = await clientError { _ = try await refusedClient.workers() }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(refused?.code == .refused)
        #expect(refused?.isRetryable == false)
        #expect(refused?.message.hasPrefix("the coordinator at \(server.endpoint) refused this client's key") == true)
        await refusedClient.close()

        // No keys at all against a CURVE endpoint, or the wrong server key: the handshake fails.
        var wrongServerKey = Self.configuration(server.endpoint, timeout: .seconds(1))
        wrongServerKey.security = .curve(clientKeys: admitted, serverKey: stranger.publicKey)
        for configuration in [Self.configuration(server.endpoint, timeout: .seconds(1)), wrongServerKey] {
            let client = try await SpliceClient.connect(configuration)
            let failed = await clientError { _ = try await client.workers() }
            #expect(failed?.code == .unreachable)
            #expect(failed?.message.hasPrefix("the connection handshake with \(server.endpoint) failed") == true,
                    "\(String(describing: failed))")
            await client.close()
        }
        await server.stop()
    }
}

/// Runs `body` with a client of `server` (short waits, `timeout` per call), then closes both.
func withClient(of server: ScriptedAPIServer, timeout: Duration = .seconds(30),
                _ body: (SpliceClient) async throws -> Void) async throws {
    let client = try await SpliceClient.connect(ClientAPITests.configuration(server.endpoint, timeout: timeout))
    do {
        try await body(client)
    } catch {
        await client.close()
        await server.stop()
        throw error
    }
    await client.close()
    await server.stop()
}

extension SpliceClient {
    /// `skippedReplies`, awaited (for `eventually`).
    func skippedRepliesNow() -> Int { skippedReplies }
}

/// The `SpliceClientError` that `body` throws; nil (and a recorded issue for any other error) otherwise.
func clientError(_ body: () async throws -> Void) async -> SpliceClientError? {
    do {
        try await body()
        Issue.record("expected a SpliceClientError, got success")
    } catch let error as SpliceClientError {
        return error
    } catch {
        Issue.record("expected a SpliceClientError, got \(error)")
    }
    return nil
}
