import Foundation
import SpliceWire
import Testing

@Suite("Protocol envelope: encoding and decoding every message type")
struct WireCodecTests {
    let codec = WireCodec()

    private func roundTrip<M: WireMessage & Equatable>(_ messages: [M]) throws {
        for message in messages {
            let frames = try codec.encode(message, requestID: "r-1")
            #expect(frames.count == 1)
            let envelope = try codec.decode(frames, as: M.self).get()
            #expect(envelope.message == message)
            #expect(envelope.requestID == "r-1")

            let json = try #require(try JSONSerialization.jsonObject(with: frames[0]) as? [String: Any])
            #expect(json["protocol"] as? String == M.protocolName)
            #expect(json["version"] as? Int == M.protocolVersion)
            #expect(json["type"] as? String == type(of: message.body).messageType)
            #expect(json["body"] is [String: Any])
        }
        // Every type in the catalogue has a sample, so a new type cannot skip this test.
        let sampled = Set(messages.map { type(of: $0.body).messageType })
        #expect(sampled == Set(M.catalogue.messageTypes))
    }

    @Test func workerMessagesRoundTrip() throws { try roundTrip(Samples.worker) }
    @Test func coordinatorMessagesRoundTrip() throws { try roundTrip(Samples.coordinator) }
    @Test func apiRequestsRoundTrip() throws { try roundTrip(Samples.requests) }
    @Test func apiRepliesRoundTrip() throws { try roundTrip(Samples.replies) }

    @Test("the catalogues hold the documented types")
    func catalogues() {
        #expect(WorkerMessage.catalogue.messageTypes
            == ["ACCEPT", "COMPLETE", "DISCONNECT", "FAIL", "HEARTBEAT", "HELLO", "PROGRESS"])
        #expect(CoordinatorMessage.catalogue.messageTypes
            == ["ACK", "ASSIGN", "CANCEL", "DISCONNECT", "HEARTBEAT", "WELCOME"])
        #expect(APIRequest.catalogue.messageTypes
            == ["CANCEL", "ENROLL", "LIST", "REVOKE", "STATUS", "SUBMIT", "WORKERS"])
        #expect(APIReply.catalogue.messageTypes
            == ["CANCELLED", "ERROR", "JOB_LIST", "JOB_STATUS", "SUBMITTED", "WORKER_KEY", "WORKER_LIST"])
    }

    @Test("a message without a request id decodes with none; the wire form is stable")
    func noRequestID() throws {
        let frames = try codec.encode(WorkerMessage.heartbeat(Heartbeat()))
        #expect(try codec.decode(frames, as: WorkerMessage.self).get().requestID == nil)
        #expect(String(decoding: frames[0], as: UTF8.self)
            == #"{"body":{},"protocol":"splice-worker","type":"HEARTBEAT","version":1}"#)
    }

    @Test("the segment spec travels untouched, integers exact")
    func opaqueSpec() throws {
        let frames = try codec.encode(Samples.coordinator[1])
        guard case .assign(let assign) = try codec.decode(frames, as: CoordinatorMessage.self).get().message else {
            Issue.record("not an ASSIGN")
            return
        }
        #expect(assign.spec == Samples.spec)

        struct Range: Codable, Equatable {
            var start: Int64
            var duration: Int64
            var timescale: Int32
        }
        struct Spec: Codable, Equatable {
            var range: Range
            var codec: String
        }
        let spec = try assign.spec.decode(Spec.self)
        #expect(spec == Spec(range: Range(start: 9_007_199_254_740_993, duration: 90_000, timescale: 90_000), codec: "libx264"))
        #expect(try JSONValue(encoding: spec).decode(Spec.self) == spec)
    }

    @Test("encoding a message over the size limit fails instead of producing it")
    func encodeOversized() {
        let small = WireCodec(maxMessageBytes: 200)
        #expect(throws: WireError.self) { try small.encode(Samples.worker[0]) }
        do {
            _ = try small.encode(Samples.worker[0])
        } catch {
            #expect(error.code == .messageTooLarge)
        }
    }
}

@Suite("WireJSONEncoder writes what JSONEncoder writes")
struct WireJSONEncoderTests {
    let codec = WireCodec()

    private func reference(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func fast(_ value: some Encodable) throws -> String {
        String(decoding: try WireJSONEncoder.encode(value), as: UTF8.self)
    }

    @Test("every sample message, byte for byte, without falling back")
    func samples() throws {
        func check<M: WireMessage>(_ messages: [M]) throws {
            for message in messages {
                #expect(codec.encodesWithoutFallback(message), "\(type(of: message.body).messageType)")
                for id in [nil, "r-1"] {
                    #expect(try codec.encode(message, requestID: id) == codec.referenceEncode(message, requestID: id),
                            "\(type(of: message.body).messageType)")
                }
            }
        }
        try check(Samples.worker)
        try check(Samples.coordinator)
        try check(Samples.requests)
        try check(Samples.replies)
    }

    struct Awkward: Codable {
        var text = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} nul \u{0} ü→🎬"
        var integers: [Int64] = [0, -1, .max, .min]
        var doubles: [Double] = [0.25, 2, -3, 1e-7, 1.5e300, 0.1 + 0.2, 123456789.125]
        var missing: String? = nil
        var present: Int? = 4
        var flags = [true, false]
        var nested: [[String]] = [[], ["a", "b"]]
        var map = ["zeta": 1, "alpha": 2, "Beta": 3, "a10": 4, "a9": 5]
        var json: JSONValue = .object([
            "z": .array([.null, .bool(true), .integer(-7), .double(0.5), .string("x\"y")]),
            "A": .object(["inner": .object([:]), "empty": .array([])]),
        ])
        var nothing = Empty()
        var unsigned: UInt8 = 255
        var small: Int16 = -300
    }

    struct Empty: Codable {}

    struct Twice: Encodable {
        func encode(to encoder: any Encoder) throws {
            enum Key: CodingKey { case b, a }
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(1, forKey: .b)
            try container.encode(["x": 1], forKey: .a)
            try container.encode(2, forKey: .b)
        }
    }

    @Test("strings, numbers, optionals, nesting, dictionaries and JSONValue")
    func awkwardValues() throws {
        #expect(try fast(Awkward()) == reference(Awkward()))
        #expect(try fast(Twice()) == reference(Twice()), "a key encoded twice keeps its last value")
        #expect(try fast([Twice(), Twice()]) == reference([Twice(), Twice()]))
        #expect(try fast(["top", "level"]) == reference(["top", "level"]))
        #expect(try fast(JSONValue.integer(3)) == reference(JSONValue.integer(3)))
    }

    struct Dated: Codable { var at = Date(timeIntervalSince1970: 1) }
    struct Floaty: Codable { var value: Float = 0.1 }
    struct Nested: Encodable {
        func encode(to encoder: any Encoder) throws {
            enum Key: CodingKey { case outer, inner }
            var container = encoder.container(keyedBy: Key.self)
            var inner = container.nestedContainer(keyedBy: Key.self, forKey: .outer)
            try inner.encode(1, forKey: .inner)
        }
    }

    @Test("what JSONEncoder special-cases is left to JSONEncoder")
    func unsupported() {
        #expect(throws: WireJSONEncoder.Unsupported.self) { try WireJSONEncoder.encode(Dated()) }
        #expect(throws: WireJSONEncoder.Unsupported.self) { try WireJSONEncoder.encode(Floaty()) }
        #expect(throws: WireJSONEncoder.Unsupported.self) { try WireJSONEncoder.encode(Nested()) }
        #expect(throws: WireJSONEncoder.Unsupported.self) { try WireJSONEncoder.encode(Double.nan) }
    }
}
