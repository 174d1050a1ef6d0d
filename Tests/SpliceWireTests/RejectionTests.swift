import Foundation
import SpliceCore
import SpliceJSON
import SpliceWire
import Testing

@Suite("Total decoding: everything malformed becomes a typed rejection")
struct RejectionTests {
    let codec = WireCodec(maxMessageBytes: 4096)

    private func reason<M: WireMessage>(_ frames: [Data], as type: M.Type) -> WireRejection.Reason? {
        switch codec.decode(frames, as: type) {
        case .success: nil
        case .failure(let rejection): rejection.reason
        }
    }

    private func reason(_ frames: [Data]) -> WireRejection.Reason? { reason(frames, as: WorkerMessage.self) }
    private func reason(json: String) -> WireRejection.Reason? { reason([Data(json.utf8)]) }

    @Test("frame count")
    func frames() throws {
        #expect(reason([]) == .missingFrames)
        let good = try codec.encode(WorkerMessage.heartbeat(Heartbeat()))
        #expect(reason(good + good) == .tooManyFrames)
        #expect(reason(good + [Data()]) == .tooManyFrames)
        #expect(reason(good) == nil)
    }

    @Test("garbage, empty and non-object frames are garbled")
    func garbled() {
        #expect(reason([Data()]) == .garbled)
        #expect(reason([Data([0xFF, 0x00, 0x13, 0x37])]) == .garbled)
        #expect(reason(json: "not json") == .garbled)
        #expect(reason(json: "[1, 2, 3]") == .garbled)
        #expect(reason(json: "42") == .garbled)
        #expect(reason(json: "{}") == .garbled)
        #expect(reason(json: #"{"protocol": 7, "version": 1, "type": "HEARTBEAT", "body": {}}"#) == .garbled)
        #expect(reason(json: #"{"protocol": "splice-worker", "type": "HEARTBEAT", "body": {}}"#) == .garbled)
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 2, "body": {}}"#) == .garbled)
    }

    @Test("a message cut short anywhere is rejected, never decoded")
    func truncated() throws {
        let frame = try codec.encode(Samples.worker[0])[0]
        for length in stride(from: 0, to: frame.count, by: 7) {
            guard case .failure(let rejection) = codec.decode([frame.prefix(length)], as: WorkerMessage.self) else {
                Issue.record("a \(length)-byte prefix decoded")
                continue
            }
            #expect(rejection.reason == .garbled)
        }
    }

    @Test("wrong protocol and wrong version")
    func protocolAndVersion() throws {
        #expect(reason(json: #"{"protocol": "MDPW01", "version": 1, "type": "HEARTBEAT", "body": {}}"#) == .wrongProtocol)
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 4, "type": "HEARTBEAT", "body": {}}"#)
            == .unsupportedVersion)
        // Version 1 (before work orders carried their plan apart from their segment).
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 1, "type": "HEARTBEAT", "body": {}}"#)
            == .unsupportedVersion)
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 0, "type": "HEARTBEAT", "body": {}}"#)
            == .unsupportedVersion)
        // An API request arriving on the worker endpoint.
        #expect(reason(try codec.encode(APIRequest.workers(ListWorkers()))) == .wrongProtocol)
    }

    @Test("unknown types, and types of the other direction")
    func unknownType() throws {
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 2, "type": "EXPLODE", "body": {}}"#)
            == .unknownType)
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 2, "type": "hello", "body": {}}"#)
            == .unknownType)
        // ASSIGN is a coordinator→worker message: the coordinator does not accept it.
        let assign = try codec.encode(Samples.coordinator[1])
        #expect(reason(assign, as: WorkerMessage.self) == .unknownType)
        #expect(reason(assign, as: CoordinatorMessage.self) == nil)
    }

    @Test("bodies that do not match their type")
    func invalidBody() throws {
        let header = #""protocol": "splice-worker", "version": 2"#
        #expect(reason(json: "{\(header), \"type\": \"ACCEPT\"}") == .invalidBody)
        #expect(reason(json: "{\(header), \"type\": \"ACCEPT\", \"body\": {}}") == .invalidBody)
        #expect(reason(json: "{\(header), \"type\": \"ACCEPT\", \"body\": []}") == .invalidBody)
        #expect(reason(json: """
            {\(header), "type": "PROGRESS", "body": {"attempt": {"job": "j", "segment": "one", "attempt": 1,
            "leaseToken": "t"}, "fraction": 0.5, "frames": 1}}
            """) == .invalidBody)
        #expect(reason(json: "{\(header), \"type\": \"DISCONNECT\", \"body\": {\"reason\": \"tired\", \"detail\": \"\"}}")
            == .invalidBody)
        #expect(reason(json: "{\(header), \"type\": \"HEARTBEAT\", \"id\": 5, \"body\": {}}") == .invalidBody)
        // Ids and checksums that are not what they say: refused here, never handed on as "stale".
        let job = Samples.job.description, token = Samples.attempt.leaseToken.description
        func accept(job: String, token: String) -> String {
            #"{\#(header), "type": "ACCEPT", "body": {"attempt": {"job": "\#(job)", "segment": 1, "attempt": 1, "leaseToken": "\#(token)"}}}"#
        }
        #expect(reason(json: accept(job: job, token: token)) == nil)
        #expect(reason(json: accept(job: "job-1", token: token)) == .invalidBody)
        #expect(reason(json: accept(job: job, token: "7c1e9d2a-lease")) == .invalidBody)
        let complete = String(decoding: try codec.encode(WorkerMessage.complete(Samples.complete))[0], as: UTF8.self)
        #expect(reason(json: complete) == nil)
        #expect(reason(json: complete.replacingOccurrences(of: "\"sha256:", with: "\"md5:")) == .invalidBody)
        // An invalid key inside an API body.
        let enroll = #"{"protocol": "splice-api", "version": 1, "type": "ENROLL", "body": {"publicKey": "short"}}"#
        #expect(reason([Data(enroll.utf8)], as: APIRequest.self) == .invalidBody)
    }

    @Test("numbers outside the protocol's ranges are dropped as out-of-range, never handed on")
    func outOfRange() throws {
        var attempt = Samples.attempt
        attempt.segment = 0
        attempt.attempt = 1
        let huge = 1 << 62
        // What the coordinator would otherwise compute with: a heartbeat interval times the liveness.
        let welcomes: [(Int, Int, WireRejection.Reason?)] = [
            (huge, huge, .outOfRange), (2000, huge, .outOfRange), (0, 3, .outOfRange), (-5, 3, .outOfRange),
            (2000, 0, .outOfRange), (2000, 3, nil), (604_800_000, 1000, nil),
        ]
        for (interval, liveness, expected) in welcomes {
            let welcome = try codec.encode(CoordinatorMessage.welcome(
                Welcome(session: "s", heartbeatIntervalMilliseconds: interval, heartbeatLiveness: liveness)))
            #expect(reason(welcome, as: CoordinatorMessage.self) == expected, "\(interval) ms × \(liveness)")
        }
        for slots in [Int.max, 0, -1, 1025] {
            let hello = try codec.encode(WorkerMessage.hello(Hello(workerName: "w", slots: slots, encoders: [])))
            #expect(reason(hello) == .outOfRange, "slots \(slots)")
        }
        #expect(reason(try codec.encode(WorkerMessage.hello(Hello(workerName: "w", slots: 1024, encoders: []))))
                == nil)
        for (cores, threads, expected) in [(0, 1, WireRejection.Reason.outOfRange), (65_537, 1, .outOfRange),
                                           (4, 0, .outOfRange), (4, Int.max, .outOfRange)] {
            let hello = Hello(workerName: "w", slots: 1, encoders: [], usableCores: cores, threadsPerSlot: threads)
            #expect(reason(try codec.encode(WorkerMessage.hello(hello))) == expected, "\(cores) cores, \(threads) threads")
        }
        let fine = Hello(workerName: "w", slots: 1, encoders: [], usableCores: 65_536, threadsPerSlot: 1)
        #expect(reason(try codec.encode(WorkerMessage.hello(fine))) == nil)
        let assign = Assign(attempt: attempt, outputPath: "/s", leaseMilliseconds: huge, progressIntervalMilliseconds: 1,
                            spec: JSONPayload(.object([:])))
        #expect(reason(try codec.encode(CoordinatorMessage.assign(assign)), as: CoordinatorMessage.self) == .outOfRange)
        var bigSegment = attempt
        bigSegment.segment = Int(Int32.max) + 1
        #expect(reason(try codec.encode(WorkerMessage.accept(Accept(attempt: bigSegment)))) == .outOfRange)
        var zeroAttempt = attempt
        zeroAttempt.attempt = 0
        #expect(reason(try codec.encode(WorkerMessage.accept(Accept(attempt: zeroAttempt)))) == .outOfRange)
        #expect(reason(try codec.encode(WorkerMessage.progress(Progress(attempt: attempt, fraction: 2, frames: 1))))
                == .outOfRange)
        #expect(reason(try codec.encode(WorkerMessage.progress(Progress(attempt: attempt, fraction: 0.5, frames: -1))))
                == .outOfRange)
        var negative = Samples.complete
        negative.sizeBytes = -1
        #expect(reason(try codec.encode(WorkerMessage.complete(negative))) == .outOfRange)
        let submit = SubmitJob(input: "/a", output: "/b", export: JSONPayload(.object([:])), priority: huge)
        #expect(reason(try codec.encode(APIRequest.submit(submit)), as: APIRequest.self) == .outOfRange)
        #expect(reason(try codec.encode(APIRequest.list(ListJobs(limit: -3))), as: APIRequest.self) == .outOfRange)
    }

    @Test("COMPLETE's figures: absent decodes as none, present as sent, out of range is dropped")
    func completeFigures() throws {
        func decoded(_ json: String) throws -> Complete? {
            guard case .complete(let complete) = try codec.decode([Data(json.utf8)], as: WorkerMessage.self).get().message
            else { return nil }
            return complete
        }
        // An older worker's COMPLETE, as it is on the wire: no `figures` key at all.
        let old = String(decoding: try codec.encode(WorkerMessage.complete(Samples.complete))[0], as: UTF8.self)
        #expect(!old.contains("figures"))
        #expect(try decoded(old)?.figures == nil)
        let new = String(decoding: try codec.encode(WorkerMessage.complete(Samples.completeWithFigures))[0],
                         as: UTF8.self)
        #expect(try decoded(new)?.figures == Samples.completeWithFigures.figures)
        // Only the bytes: the rate and the QP are absent, not zero.
        let bytesOnly = new.replacingOccurrences(
            of: #""figures":{"meanQP":27.43,"videoBitsPerSecond":1192452,"videoBytes":298113}"#,
            with: #""figures":{"videoBytes":298113}"#)
        #expect(bytesOnly != new)
        #expect(try decoded(bytesOnly)?.figures == SegmentFigures(videoBytes: 298_113))
        // Figures without the bytes they describe are not figures.
        #expect(reason(json: new.replacingOccurrences(of: #","videoBytes":298113"#, with: "")) == .invalidBody)

        var figures = try #require(Samples.completeWithFigures.figures)
        let outside: [(inout SegmentFigures) -> Void] = [
            { $0.videoBytes = -1 }, { $0.videoBytes = (1 << 50) + 1 },
            { $0.videoBitsPerSecond = -8 }, { $0.videoBitsPerSecond = 1_000_000_000_001 },
            { $0.meanQP = -0.5 }, { $0.meanQP = 1000.5 },
        ]
        for change in outside {
            var complete = Samples.completeWithFigures
            var changed = figures
            change(&changed)
            complete.figures = changed
            #expect(reason(try codec.encode(WorkerMessage.complete(complete))) == .outOfRange, "\(changed)")
            // The same figures inside a HELLO's unacknowledged results.
            let hello = Hello(workerName: "w", slots: 1, encoders: [], finished: [complete])
            #expect(reason(try codec.encode(WorkerMessage.hello(hello))) == .outOfRange, "\(changed)")
        }
        // A QP no double holds never reaches the range check: the parser refuses it.
        #expect(reason(json: new.replacingOccurrences(of: "27.43", with: "1e999")) == .garbled)
        figures.meanQP = 1000
        figures.videoBitsPerSecond = 0
        var edge = Samples.completeWithFigures
        edge.figures = figures
        #expect(reason(try codec.encode(WorkerMessage.complete(edge))) == nil)
    }

    @Test("unknown extra fields are tolerated (forward compatible within a version)")
    func extraFields() {
        let json = #"{"protocol": "splice-worker", "version": 2, "type": "HEARTBEAT", "body": {"load": 3}, "x": 1}"#
        #expect(reason(json: json) == nil)
    }

    @Test("oversized messages are rejected before parsing")
    func oversized() {
        let padding = String(repeating: " ", count: 5000)
        #expect(reason(json: #"{"protocol": "splice-worker", "version": 2, "type": "HEARTBEAT", "body": {}}"# + padding)
            == .oversized)
    }

    @Test("every rejection whose envelope id can be read carries it, so the API can answer it")
    func requestIDs() throws {
        let api = { (json: String) -> WireRejection? in
            if case .failure(let rejection) = self.codec.decode([Data(json.utf8)], as: APIRequest.self) { rejection } else { nil }
        }
        let refused: [(String, WireRejection.Reason)] = [
            (#"{"id": "q", "protocol": "splice-worker", "version": 2, "type": "WORKERS", "body": {}}"#, .wrongProtocol),
            (#"{"id": "q", "protocol": "splice-api", "version": 7, "type": "WORKERS", "body": {}}"#, .unsupportedVersion),
            (#"{"id": "q", "protocol": "splice-api", "version": 1, "type": "EXPLODE", "body": {}}"#, .unknownType),
            (#"{"id": "q", "protocol": "splice-api", "version": 1, "type": "STATUS", "body": {"job": 42}}"#, .invalidBody),
            (#"{"id": "q", "protocol": "splice-api", "version": 1, "type": "LIST", "body": {"limit": 0}}"#, .outOfRange),
            (#"{"id": "q", "version": 1, "type": "LIST", "body": {}}"#, .garbled),
            (#"{"body": {"limit": 1001}, "type": "LIST", "version": 1, "protocol": "splice-api", "id": "q"}"#, .outOfRange),
        ]
        for (json, expected) in refused {
            let rejection = try #require(api(json), "\(json) decoded")
            #expect(rejection.reason == expected, "\(json)")
            #expect(rejection.requestID == "q", "\(json)")
        }
        // The field is named in the detail, as the API's ERROR says it.
        #expect(api(refused[3].0)?.detail.contains("`body.job`") == true, "\(api(refused[3].0)?.detail ?? "")")
        #expect(api(refused[4].0)?.detail == "LIST: `limit` is 0, outside 1…1000")
        #expect(api(refused[2].0)?.detail.contains(
            "CANCEL, ENROLL, JOBS_PRUNE, JOIN_TOKENS, JOIN_TOKEN_CREATE, JOIN_TOKEN_REVOKE, LIST, REVOKE, STATUS, "
                + "SUBMIT, TOKENS, TOKEN_CREATE, TOKEN_REVOKE, WORKERS, WORKERS_PRUNE") == true)
        // No id to read: not JSON, not an object, an id that is not a string.
        #expect(api("not json")?.requestID == nil)
        #expect(api(#"["id", "q"]"#)?.requestID == nil)
        let numeric = api(#"{"id": 5, "protocol": "splice-api", "version": 1, "type": "WORKERS", "body": {}}"#)
        #expect(numeric?.reason == .invalidBody && numeric?.requestID == nil)
        // `null` is the same as no id.
        guard case .success(let envelope) = codec.decode(
            [Data(#"{"id": null, "protocol": "splice-api", "version": 1, "type": "WORKERS", "body": {}}"#.utf8)],
            as: APIRequest.self) else {
            Issue.record("a null id was refused")
            return
        }
        #expect(envelope.requestID == nil)
    }

    @Test("an oversized envelope's id is found without parsing it, wherever it sits")
    func oversizedRequestIDs() {
        let pad = String(repeating: "x", count: 5000)
        let oversized = { (json: String) -> WireRejection? in
            if case .failure(let rejection) = self.codec.decode([Data(json.utf8)], as: APIRequest.self) { rejection } else { nil }
        }
        let cases: [(String, String?)] = [
            // As WireCodec writes it: the body first, then the id.
            (#"{"body":{"pad":"\#(pad)"},"id":"r1","protocol":"splice-api","type":"LIST","version":1}"#, "r1"),
            // As Python writes it: the id first.
            (#"{"id": "r2", "protocol": "splice-api", "body": {"pad": "\#(pad)"}}"#, "r2"),
            // Brackets and quotes inside strings, nested ids, an escaped quote in the id.
            (#"{"body":{"id":"inner","s":"}]\"{[","a":[{"id":"no"},[1,2]],"pad":"\#(pad)"},"id":"a\"b"}"#, "a\"b"),
            // Nested only, a number, a truncated document, no object at all.
            (#"{"body":{"id":"inner","pad":"\#(pad)"}}"#, nil),
            (#"{"body":{"pad":"\#(pad)"},"id":7}"#, nil),
            (#"{"body":{"pad":"\#(pad)"#, nil),
            (#"["\#(pad)", {"id": "r3"}]"#, nil),
            // An id too long to be worth echoing.
            (#"{"body":{"pad":"\#(pad)"},"id":"\#(String(repeating: "i", count: 300))"}"#, nil),
        ]
        for (json, id) in cases {
            let rejection = oversized(json)
            #expect(rejection?.reason == .oversized)
            #expect(rejection?.requestID == id, "\(json.prefix(60))…")
        }
    }

    @Test("the API's answer to a refused request: a typed code and the detail naming the field")
    func apiErrors() {
        #expect(APIError(refusing: WireRejection(.oversized, "5000 bytes, over the 4096-byte limit")).code == .tooLarge)
        #expect(APIError(refusing: WireRejection(.unsupportedVersion, "`version` is 7")).code == .unsupportedVersion)
        let range = APIError(refusing: WireRejection(.outOfRange, "LIST: `limit` is 0, outside 1…1000"))
        #expect(range.code == .invalidRequest)
        #expect(range.message == "invalid request: LIST: `limit` is 0, outside 1…1000")
        #expect(!range.isRetryable)
        for reason in [WireRejection.Reason.garbled, .wrongProtocol, .unknownType, .invalidBody] {
            #expect(APIError(refusing: WireRejection(reason, "x")).code == .invalidRequest)
        }
    }

    @Test("random bytes and mutated messages never crash the decoder")
    func fuzz() throws {
        let valid = try Samples.worker.map { try codec.encode($0)[0] }
        for round in 0..<2000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...300)).map { _ in UInt8.random(in: 0...255) }
            } else {
                bytes = [UInt8](valid[round % valid.count])
                for _ in 0..<Int.random(in: 1...4) { bytes[Int.random(in: 0..<bytes.count)] = UInt8.random(in: 0...255) }
            }
            switch codec.decode([Data(bytes)], as: WorkerMessage.self) {
            case .success(let envelope):
                #expect(WorkerMessage.catalogue.messageTypes.contains(type(of: envelope.message.body).messageType))
            case .failure(let rejection):
                #expect(!rejection.detail.isEmpty)
            }
        }
    }
}
