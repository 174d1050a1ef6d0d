import Foundation
import SpliceJSON
import SpliceTestSupport
import SpliceWire
import Testing

@Suite("The cluster protocol over real sockets", .timeLimit(.minutes(1)))
struct ProtocolEndpointTests {
    private let attempt = SegmentAttempt(job: .numbered(1), segment: 3, attempt: 1, leaseToken: .numbered(1))

    @Test("a burst is read in order, at most `upTo` at a time, garbage in place as rejections, nothing lost")
    func burstReceive() async throws {
        let context = try WireContext()
        var options = WireOptions.router()
        options.inboundBuffer = 8
        let coordinator = CoordinatorWorkerEndpoint(
            try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options))
        let worker = WorkerEndpoint(try await WireEndpoint.connect(
            coordinator.wire.endpoints[0], type: .dealer, context: context))
        let count = 300
        for index in 0..<count {
            if index == 150 {
                try await worker.wire.send([Data(text: "not json")])
            }
            try await worker.send(.progress(Progress(attempt: attempt, fraction: 0, frames: index)))
        }
        var frames: [Int] = []
        var rejected = 0
        var largestBurst = 0
        while frames.count < count {
            let burst = try #require(await within(.seconds(30)) { () -> [Received<WorkerMessage>]? in
                let burst = await coordinator.receive(upTo: 16)
                return burst.isEmpty ? nil : burst
            })
            #expect(burst.count <= 16)
            largestBurst = max(largestBurst, burst.count)
            for received in burst {
                switch received {
                case .message(let envelope, _):
                    if case .progress(let progress) = envelope.message { frames.append(progress.frames) }
                case .rejected(let rejection, _):
                    #expect(rejection.reason == .garbled)
                    #expect(frames.count == 150, "the garbage arrived between messages 149 and 150")
                    rejected += 1
                }
            }
        }
        #expect(frames == Array(0..<count))
        #expect(rejected == 1)
        #expect(largestBurst > 1, "a backlog is handed over in bursts")
        #expect(coordinator.counters.snapshot().delivered == count)
        await coordinator.close(linger: .zero)
        await worker.close(linger: .zero)
        await context.terminate()
    }

    @Test("send(all:) sends in order and answers each message; one unroutable peer fails alone")
    func sendAll() async throws {
        let context = try WireContext()
        let coordinator = CoordinatorWorkerEndpoint(
            try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context))
        let worker = WorkerEndpoint(try await WireEndpoint.connect(
            coordinator.wire.endpoints[0], type: .dealer, context: context))
        try await worker.send(.heartbeat(Heartbeat()))
        let peer = try #require(await within(.seconds(30)) { await coordinator.receiveMessage() }).1
        let stranger = WirePeer(routingID: RoutingID("nobody"), publicKey: nil)
        let cancels = (0..<5).map { index in
            CoordinatorMessage.cancel(Cancel(attempt: SegmentAttempt(job: .numbered(1), segment: index, attempt: 1,
                                                                     leaseToken: .numbered(index)), reason: .jobCancelled))
        }
        let results = await coordinator.send(all: cancels.enumerated().map { ($1, $0 == 2 ? stranger : peer, nil) })
        #expect(results.count == 5)
        for (index, result) in results.enumerated() {
            switch result {
            case .success: #expect(index != 2)
            case .failure(let error): #expect(index == 2 && error.code == WireError.Code.unroutable)
            }
        }
        var segments: [Int] = []
        while segments.count < 4 {
            let received = try #require(await within(.seconds(30)) { await worker.receiveMessage() })
            if case .cancel(let cancel) = received.0.message { segments.append(cancel.attempt.segment) }
        }
        #expect(segments == [0, 1, 3, 4])
        #expect(await coordinator.send(all: []).isEmpty)
        await coordinator.close(linger: .zero)
        await worker.close(linger: .zero)
        await context.terminate()
    }

    @Test("garbage is counted and dropped while a well-behaved worker keeps working")
    func garbage() async throws {
        let context = try WireContext()
        var options = WireOptions.router()
        options.maxMessageBytes = 32 << 10
        let coordinator = CoordinatorWorkerEndpoint(
            try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        )
        let address = coordinator.wire.endpoints[0]
        let worker = WorkerEndpoint(try await WireEndpoint.connect(address, type: .dealer, context: context))
        let vandal = try await WireEndpoint.connect(address, type: .dealer, context: context)

        try await worker.send(.hello(Hello(workerName: "good", slots: 2, encoders: ["libx264"])))
        let hello = try #require(await within(.seconds(30)) { await coordinator.receiveMessage() })
        guard case .hello(let body) = hello.0.message else {
            Issue.record("expected HELLO")
            return
        }
        #expect(body.workerName == "good")

        let codec = WireCodec()
        let json = { (text: String) in [Data(text: text)] }
        let garbage: [([Data], WireRejection.Reason)] = [
            ([Data([0xDE, 0xAD, 0xBE, 0xEF])], .garbled),
            ([Data()], .garbled),
            (json(#"{"protocol": "splice-worker", "version": 2, "type": "HEL"#), .garbled),
            (json(#"{"protocol": "MDPW01", "version": 1, "type": "HELLO", "body": {}}"#), .wrongProtocol),
            (json(#"{"protocol": "splice-worker", "version": 9, "type": "HELLO", "body": {}}"#), .unsupportedVersion),
            (json(#"{"protocol": "splice-worker", "version": 2, "type": "SELF_DESTRUCT", "body": {}}"#), .unknownType),
            (try codec.encode(CoordinatorMessage.cancel(Cancel(attempt: attempt, reason: .leaseLost))), .unknownType),
            (json(#"{"protocol": "splice-worker", "version": 2, "type": "COMPLETE", "body": {"x": 1}}"#), .invalidBody),
            (Array(repeating: Data(text: "f"), count: 40), .tooManyFrames),
            ([Data(count: 20 << 10), Data(count: 20 << 10)], .oversized),
            // One frame over the message limit, under libzmq's disconnect limit (16 times it): read
            // without being copied, counted and handed up like the others.
            ([Data(count: 64 << 10)], .oversized),
            (try codec.encode(WorkerMessage.heartbeat(Heartbeat())) + [Data(text: "extra")], .tooManyFrames),
        ]
        for (frames, _) in garbage { try await vandal.send(frames) }
        // One frame over ZMQ_MAXMSGSIZE: libzmq drops the vandal's connection (it reconnects).
        try await vandal.send([Data(count: (16 * 32 << 10) + 1)])

        try await worker.send(.accept(Accept(attempt: attempt)))
        var rejections: [WireRejection.Reason] = []
        var accepted = false
        // The two connections are fair-queued: read until the ACCEPT and every piece of garbage are in.
        while !accepted || coordinator.counters.snapshot().totalDropped < garbage.count,
            let received = await within(.seconds(30), { await coordinator.receive() })
        {
            switch received {
            case .message(let envelope, let peer):
                #expect(envelope.message == .accept(Accept(attempt: attempt)))
                #expect(peer.routingID == hello.1.routingID)
                accepted = true
            case .rejected(let rejection, _):
                rejections.append(rejection.reason)
            }
        }
        #expect(accepted)
        let counts = coordinator.counters.snapshot()
        let expected = Dictionary(garbage.map { ($0.1, 1) }, uniquingKeysWith: +)
        #expect(counts.dropped == expected)
        #expect(counts.delivered == 2)
        #expect(counts.received == counts.delivered + counts.totalDropped)
        // Rejections are also handed to the caller (to log or answer), the oversized ones too; the
        // socket thread drops only the one over its frame limit before decoding.
        #expect(rejections.count == garbage.count - 1)

        // The coordinator still answers the good worker.
        try await coordinator.send(.welcome(Welcome(session: "s", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3)), to: hello.1)
        let welcome = try #require(await within(.seconds(30)) { await worker.receiveMessage() })
        #expect(welcome.0.message == .welcome(Welcome(session: "s", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3)))

        for endpoint in [worker.wire, vandal, coordinator.wire] { await endpoint.close(linger: .zero) }
        await context.terminate()
    }

    @Test("a segment's life over CURVE, addressed by the worker's key")
    func segmentLifecycle() async throws {
        let context = try WireContext()
        let workerKeys = try CurveKeyPair.generate()
        let coordinatorKeys = try CurveKeyPair.generate()
        let enrolled = EnrolledKeys([workerKeys.publicKey])
        let zap = try await ZAPHandler.start(context: context, authorizer: enrolled)
        let coordinator = CoordinatorWorkerEndpoint(try await WireEndpoint.bind(
            [anyLoopbackPort], type: .router, context: context, options: .router(curve: .server(keys: coordinatorKeys))
        ))
        let workerOptions = WireOptions.dealer(
            routingID: RoutingID("w:" + workerKeys.publicKey.z85),
            curve: .client(keys: workerKeys, serverKey: coordinatorKeys.publicKey), immediate: false
        )
        let worker = WorkerEndpoint(try await WireEndpoint.connect(
            coordinator.wire.endpoints[0], type: .dealer, context: context, options: workerOptions
        ))

        let complete = Complete(
            attempt: attempt, outputPath: "/spool/job-1/3-lease-a.mkv", checksum: .filled(0), sizeBytes: 42,
            encodeMilliseconds: 5
        )
        try await worker.send(.hello(Hello(workerName: "w", slots: 1, encoders: ["libx264"])))
        let spec = JSONPayload(.object(["start": .integer(0), "duration": .integer(90_000)]))
        let script: [(worker: WorkerMessage?, coordinator: CoordinatorMessage?)] = [
            (nil, .welcome(Welcome(session: "s1", heartbeatIntervalMilliseconds: 500, heartbeatLiveness: 3))),
            (nil, .assign(Assign(attempt: attempt, outputPath: complete.outputPath, leaseMilliseconds: 10_000,
                                 progressIntervalMilliseconds: 500, spec: spec))),
            (.accept(Accept(attempt: attempt)), .ack(Ack(attempt: attempt, acknowledges: .accept, outcome: .accepted))),
            (.progress(Progress(attempt: attempt, fraction: 0.5, frames: 10)),
             .ack(Ack(attempt: attempt, acknowledges: .progress, outcome: .accepted))),
            (.complete(complete), .ack(Ack(attempt: attempt, acknowledges: .complete, outcome: .accepted))),
            (.complete(complete), .ack(Ack(attempt: attempt, acknowledges: .complete, outcome: .duplicate))),
        ]
        let hello = try #require(await within(.seconds(30)) { await coordinator.receiveMessage() })
        #expect(hello.1.publicKey == workerKeys.publicKey)
        for step in script {
            if let message = step.worker {
                try await worker.send(message)
                let received = try #require(await within(.seconds(30)) { await coordinator.receiveMessage() })
                #expect(received.0.message == message)
                #expect(received.1.publicKey == workerKeys.publicKey)
            }
            if let message = step.coordinator {
                try await coordinator.send(message, toKey: workerKeys.publicKey)
                let received = try #require(await within(.seconds(30)) { await worker.receiveMessage() })
                #expect(received.0.message == message)
            }
        }

        // Revocation ends the session with a DISCONNECT the worker understands.
        enrolled.revoke(workerKeys.publicKey)
        let cut = await coordinator.disconnect(
            key: workerKeys.publicKey, farewell: .disconnect(Disconnect(reason: .revoked, detail: "revoked by operator"))
        )
        #expect(cut == 1)
        let farewell = try #require(await within(.seconds(30)) { await worker.receiveMessage() })
        #expect(farewell.0.message == .disconnect(Disconnect(reason: .revoked, detail: "revoked by operator")))

        await worker.close(linger: .zero)
        await coordinator.close(linger: .zero)
        await zap.close()
        await context.terminate()
    }

    @Test("client API: a request gets the reply with its id; stale replies are skipped; silence times out")
    func apiRequestReply() async throws {
        let context = try WireContext()
        let server = APIServerEndpoint(try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context))
        let client = APIClientEndpoint(try await WireEndpoint.connect(
            server.wire.endpoints[0], type: .dealer, context: context, options: .dealer(immediate: false)
        ))
        let serving = Task {
            var answered = 0
            while let (envelope, peer) = await server.receiveMessage() {
                answered += 1
                guard case .status(let query) = envelope.message else { continue }
                if answered == 2 { continue }  // stay silent once, to test the timeout
                // A stale reply first (an earlier request's id), then the real one.
                try await server.send(.error(APIError(APIError.Code(rawValue: "late"), "old")), to: peer, requestID: "old-request")
                try await server.send(
                    .submitted(JobSubmitted(job: query.job)), to: peer, requestID: envelope.requestID
                )
            }
        }
        let reply = try await client.request(.status(JobStatusQuery(job: .numbered(9))))
        #expect(reply == .submitted(JobSubmitted(job: .numbered(9))))
        let unanswered = await wireError {
            _ = try await client.request(.status(JobStatusQuery(job: .numbered(10))), timeout: .milliseconds(300))
        }
        #expect(unanswered?.code == .timedOut)
        #expect(unanswered?.isRetryable == true)
        await client.close(linger: .zero)
        await server.close(linger: .zero)
        _ = await serving.result
        await context.terminate()
    }
}
