import Foundation
import SpliceJSON
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
            == ["ACCEPT", "COMPLETE", "DISCONNECT", "FAIL", "HEARTBEAT", "HELLO", "JOIN", "PROGRESS"])
        #expect(CoordinatorMessage.catalogue.messageTypes
            == ["ACK", "ACTIVE", "ASSIGN", "CANCEL", "DISCONNECT", "HEARTBEAT", "JOINED", "STANDBY", "WELCOME"])
        #expect(APIRequest.catalogue.messageTypes
            == ["CANCEL", "ENROLL", "JOBS_PRUNE", "JOIN_TOKENS", "JOIN_TOKEN_CREATE", "JOIN_TOKEN_REVOKE", "LIST",
                "REVOKE", "STATUS", "SUBMIT", "TOKENS", "TOKEN_CREATE", "TOKEN_REVOKE", "WORKERS", "WORKERS_PRUNE"])
        #expect(APIReply.catalogue.messageTypes
            == ["CANCELLED", "ERROR", "JOBS_PRUNED", "JOB_LIST", "JOB_STATUS", "JOIN_TOKEN", "JOIN_TOKEN_LIST",
                "SUBMITTED", "TOKEN", "TOKEN_LIST", "WORKERS_PRUNED", "WORKER_KEY", "WORKER_LIST"])
    }

    @Test("a message without a request id decodes with none; the wire form is stable")
    func noRequestID() throws {
        let frames = try codec.encode(WorkerMessage.heartbeat(Heartbeat()))
        #expect(try codec.decode(frames, as: WorkerMessage.self).get().requestID == nil)
        #expect(String(decoding: frames[0], as: UTF8.self)
            == #"{"body":{},"protocol":"splice-worker","type":"HEARTBEAT","version":3}"#)
    }

    @Test("the segment spec travels untouched, integers exact")
    func opaqueSpec() throws {
        let frames = try codec.encode(Samples.coordinator[1])
        guard case .assign(let assign) = try codec.decode(frames, as: CoordinatorMessage.self).get().message else {
            Issue.record("not an ASSIGN")
            return
        }
        #expect(assign.spec == JSONPayload(Samples.spec))
        #expect(assign.spec.value == Samples.spec)

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

@Suite("Envelopes: byte for byte what Foundation's JSONEncoder writes")
struct EnvelopeReferenceTests {
    let codec = WireCodec()

    /// The envelope as `WireCodec` documents it (docs/protocol.md, Framing), written by Foundation.
    private struct Reference<M: WireMessage>: Encodable {
        let message: M
        let requestID: String?

        enum Key: String, CodingKey { case body, id, `protocol`, type, version }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(message.body, forKey: .body)
            try container.encodeIfPresent(requestID, forKey: .id)
            try container.encode(M.protocolName, forKey: .protocol)
            try container.encode(type(of: message.body).messageType, forKey: .type)
            try container.encode(M.protocolVersion, forKey: .version)
        }
    }

    @Test("every sample message, with and without a request id")
    func samples() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func check<M: WireMessage>(_ messages: [M]) throws {
            for message in messages {
                for id in [nil, "r-1"] {
                    #expect(try codec.encode(message, requestID: id)[0]
                                == encoder.encode(Reference(message: message, requestID: id)),
                            "\(type(of: message.body).messageType)")
                }
            }
        }
        try check(Samples.worker)
        try check(Samples.coordinator)
        try check(Samples.requests)
        try check(Samples.replies)
    }
}
