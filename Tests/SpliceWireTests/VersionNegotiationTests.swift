import Foundation
import SpliceWire
import Testing

/// A direction of a made-up protocol that speaks versions 2 and 3 and gained a message type in 3,
/// as the worker protocol gains its join messages: what `since:` does without depending on them.
private enum Evolving: WireMessage, Hashable {
    case heartbeat(Heartbeat)
    case newThing(NewThing)
    case disconnect(Disconnect)

    struct NewThing: MessageBody, Hashable {
        static let messageType = "NEW_THING"
        var value: Int
    }

    static let protocolName = "splice-evolving"
    static let protocolVersion = 3
    static let oldestProtocolVersion = 2
    static let catalogue = MessageCatalogue<Evolving>([
        .body(Heartbeat.self, Evolving.heartbeat),
        .body(NewThing.self, since: 3, Evolving.newThing),
        .body(Disconnect.self, frozenSince: 3, Evolving.disconnect),
    ])

    var body: any MessageBody {
        switch self {
        case .heartbeat(let body): body
        case .newThing(let body): body
        case .disconnect(let body): body
        }
    }
}

@Suite("Protocol versions: a range accepted, answers in the peer's version, types since a version")
struct VersionNegotiationTests {
    let codec = WireCodec()

    private func envelope(_ version: Int, _ type: String, _ body: String = "{}") -> [Data] {
        [Data(#"{"protocol": "splice-evolving", "version": \#(version), "type": "\#(type)", "body": \#(body)}"#.utf8)]
    }

    private func json(_ frames: [Data]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: frames[0]) as? [String: Any])
    }

    @Test("the worker protocol is version 3 and still accepts 2, the previous release's")
    func workerProtocolRange() throws {
        #expect(WorkerMessage.protocolVersions == 2...3 && CoordinatorMessage.protocolVersions == 2...3)
        for version in [2, 3] {
            let frames = [Data(#"{"protocol": "splice-worker", "version": \#(version), "type": "HEARTBEAT", "body": {}}"#.utf8)]
            #expect(try codec.decode(frames, as: WorkerMessage.self).get().version == version)
        }
        for version in [1, 4] {
            let frames = [Data(#"{"protocol": "splice-worker", "version": \#(version), "type": "HELLO", "body": {}}"#.utf8)]
            guard case .failure(let rejection) = codec.decode(frames, as: WorkerMessage.self) else {
                Issue.record("version \(version) accepted")
                continue
            }
            // What the coordinator needs to answer it: which version, and that it was a HELLO.
            #expect(rejection.reason == .unsupportedVersion && rejection.version == version
                && rejection.messageType == "HELLO")
            #expect(rejection.detail.contains("2…3"))
        }
    }

    @Test("encoding in an older version writes that version; the newest is the default")
    func encodeInVersion() throws {
        #expect(try json(codec.encode(Evolving.heartbeat(Heartbeat())))["version"] as? Int == 3)
        let old = try codec.encode(Evolving.heartbeat(Heartbeat()), version: 2)
        #expect(try json(old)["version"] as? Int == 2)
        #expect(try codec.decode(old, as: Evolving.self).get().version == 2)
        #expect(throws: WireError.self, "a version this build does not speak") {
            try codec.encode(Evolving.heartbeat(Heartbeat()), version: 4)
        }
    }

    @Test("a type new in version 3 is never encoded for a version-2 peer, and refused from one, naming both versions")
    func since() throws {
        #expect(throws: WireError.self) { try codec.encode(Evolving.newThing(.init(value: 1)), version: 2) }
        #expect(try codec.decode(envelope(3, "NEW_THING", #"{"value": 1}"#), as: Evolving.self).get().message
            == .newThing(.init(value: 1)))
        guard case .failure(let rejection) = codec.decode(envelope(2, "NEW_THING", #"{"value": 1}"#), as: Evolving.self)
        else {
            Issue.record("a version-2 envelope carried a version-3 type")
            return
        }
        #expect(rejection.reason == .unknownType)
        #expect(rejection.detail == "`type` NEW_THING is new in splice-evolving 3; the envelope says version 2, which does not have it")
    }

    @Test("DISCONNECT is frozen from 3: read in any later version, and written in any version for a peer of another release")
    func frozenDisconnect() throws {
        let refusal = Disconnect(reason: .unsupportedVersion, detail: "upgrade", versions: ProtocolVersions(oldest: 5, newest: 6))
        // From a newer release (version 6, which this build does not speak): still read.
        let newer = try codec.encode(Evolving.disconnect(refusal), version: 6)
        let decoded = try codec.decode(newer, as: Evolving.self).get()
        #expect(decoded.message == .disconnect(refusal) && decoded.version == 6)
        // Other types of that version are not.
        guard case .failure(let rejection) = codec.decode(envelope(6, "HEARTBEAT"), as: Evolving.self) else {
            Issue.record("a HEARTBEAT of version 6 was read")
            return
        }
        #expect(rejection.reason == .unsupportedVersion)
        // To an older release (version 1): written in its version, which it reads.
        #expect(try json(codec.encode(Evolving.disconnect(refusal), version: 1))["version"] as? Int == 1)
        // Older than frozen: not read by this build.
        if case .success = codec.decode(envelope(1, "DISCONNECT", #"{"reason": "shutdown", "detail": ""}"#), as: Evolving.self) {
            Issue.record("a DISCONNECT of version 1 was read")
        }
    }

    @Test("version ranges out of range are refused")
    func ranges() {
        let backwards = #"{"protocol": "splice-worker", "version": 3, "type": "HELLO", "body": {"workerName": "w", "#
            + #""slots": 1, "encoders": [], "running": [], "finished": [], "failed": [], "software": "", "#
            + #""protocolVersions": {"oldest": 4, "newest": 3}}}"#
        guard case .failure(let rejection) = codec.decode([Data(backwards.utf8)], as: WorkerMessage.self) else {
            Issue.record("a HELLO whose oldest version is after its newest was accepted")
            return
        }
        #expect(rejection.reason == .outOfRange)
    }
}
