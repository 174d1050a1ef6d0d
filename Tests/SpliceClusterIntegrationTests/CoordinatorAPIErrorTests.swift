import Foundation
import SpliceConcurrency
import SpliceHTTP
import SpliceLog
import SpliceTestSupport
import SpliceWire
import Synchronization
import Testing

// What an integrator's client meets on the coordinator's API endpoint when it gets something
// wrong: a real coordinator, raw frames from a DEALER, the replies read as they come.

/// Log lines of a coordinator under test, kept to be searched.
final class CapturedLog: LogSink {
    private let lines = Mutex<[String]>([])

    func write(line: String) {
        lines.withLock { $0.append(line) }
    }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

@Suite("The client API answers every request whose id it can read", .timeLimit(.minutes(3)))
struct CoordinatorAPIErrorTests {
    /// One envelope as an integrator's own code might write it (id first, as Python's json does).
    static func envelope(id: String?, version: Int = 1, type: String, body: String) -> Data {
        let id = id.map { #""id": "\#($0)", "# } ?? ""
        return Data(#"{\#(id)"protocol": "splice-api", "version": \#(version), "type": "\#(type)", "body": \#(body)}"#.utf8)
    }

    /// Replies read from `client` until every id in `expected` has one, then for a moment more
    /// (so a second reply to any of them would show): every reply by id, in arrival order.
    static func replies(on client: APIClientEndpoint, expecting expected: Set<String>) async -> [String?: [APIReply]] {
        var replies: [String?: [APIReply]] = [:]
        let deadline = ContinuousClock.now + .seconds(60)
        var settle: ContinuousClock.Instant?
        while ContinuousClock.now < (settle ?? deadline) {
            let wait = (settle ?? deadline) - ContinuousClock.now
            guard let received = await withDeadline(wait, { await client.receive() }) else { continue }
            guard case .message(let envelope, _) = received else { continue }
            replies[envelope.requestID, default: []].append(envelope.message)
            if settle == nil, expected.isSubset(of: Set(replies.keys.compactMap { $0 })) {
                settle = ContinuousClock.now + .milliseconds(800)
            }
        }
        return replies
    }

    @Test("garbled bodies, numbers out of range, unknown types, other versions, oversized requests: one typed ERROR each")
    func everyRequestAnswered() async throws {
        let log = CapturedLog()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.metricsEndpoint = HTTPAddress(host: "127.0.0.1", port: 0)
            configuration.logger = Logger(level: .info, sink: log)
        }
        let context = try WireContext()
        let wire = try await WireEndpoint.connect(coordinator.endpoints.api, type: .dealer, context: context,
                                                  options: .dealer(immediate: false))
        let client = APIClientEndpoint(wire)

        // Made on a thread of their own: a debug build appends 50 million characters one by one
        // for seconds, which must not hold a thread of the cooperative pool other tests' deadlines run on.
        let (big, huge) = await ExternalTool.computeOffPool {
            (String(decoding: [UInt8](repeating: UInt8(ascii: "x"), count: 5 << 20), as: UTF8.self),
             String(decoding: [UInt8](repeating: UInt8(ascii: "y"), count: 50_000_000), as: UTF8.self))
        }
        let cases: [(id: String, frame: Data, code: APIError.Code, names: String)] = [
            ("limit-0", Self.envelope(id: "limit-0", type: "LIST", body: #"{"limit": 0}"#), .invalidRequest, "`limit`"),
            ("limit-1001", Self.envelope(id: "limit-1001", type: "LIST", body: #"{"limit": 1001}"#), .invalidRequest,
             "1…1000"),
            ("priority", Self.envelope(id: "priority", type: "SUBMIT",
                                       body: #"{"input": "/a", "output": "/b", "export": {}, "priority": 5000}"#),
             .invalidRequest, "`priority`"),
            ("unknown-type", Self.envelope(id: "unknown-type", type: "DELETE_EVERYTHING", body: "{}"), .invalidRequest,
             "`type`"),
            ("version", Self.envelope(id: "version", version: 2, type: "LIST", body: "{}"), .unsupportedVersion,
             "`version`"),
            ("job-number", Self.envelope(id: "job-number", type: "STATUS", body: #"{"job": 42}"#), .invalidRequest,
             "`body.job`"),
            ("no-output", Self.envelope(id: "no-output", type: "SUBMIT", body: #"{"input": "/a", "export": {}}"#),
             .invalidRequest, "`body.output`"),
            ("bad-export", Self.envelope(id: "bad-export", type: "SUBMIT",
                                         body: #"{"input": "/a", "output": "/b", "export": {"fileType": "mp4", "video": "yes"}}"#),
             .invalidRequest, "`export.video`"),
            ("quality", Self.envelope(id: "quality", type: "SUBMIT", body: #"""
                {"input": "/a", "output": "/b", "export": {"fileType": "mp4", "segmentDuration": {"value": 2, "timescale": 1},
                 "optimizesForNetworkUse": false, "metadata": {}, "video": {"codec": "h264", "quality": 60}}}
                """#), .invalidRequest, "`export.video.quality`"),
            ("no-protocol", Data(#"{"id": "no-protocol", "version": 1, "type": "LIST", "body": {}}"#.utf8),
             .invalidRequest, "`protocol`"),
            ("worker-protocol", Data(#"{"id": "worker-protocol", "protocol": "splice-worker", "version": 2, "type": "HEARTBEAT", "body": {}}"#.utf8),
             .invalidRequest, "`protocol`"),
            // Over the 4 MiB message limit: read without being copied, counted, answered.
            ("big", Self.envelope(id: "big", type: "SUBMIT", body: #"{"pad": "\#(big)"}"#), .tooLarge, "4194304-byte limit"),
            ("huge", Data(#"{"body": {"pad": "\#(huge)"}, "id": "huge", "protocol": "splice-api"}"#.utf8), .tooLarge,
             "50000"),
        ]
        // Nothing to answer: not JSON, an id that is not a string, an oversized frame without one.
        let unanswerable = [Data("not json at all".utf8), Self.envelope(id: nil, type: "LIST", body: #"{"limit": 0}"#),
                            Data(#"{"id": 7, "protocol": "splice-api", "version": 1, "type": "LIST", "body": {}}"#.utf8),
                            Data(#"{"body": {"pad": "\#(big)"}}"#.utf8)]
        for frame in unanswerable { try await wire.send([frame]) }
        for item in cases { try await wire.send([item.frame]) }
        // A good request after all of them: the coordinator is still serving.
        try await client.send(.list(ListJobs(limit: 1000)), requestID: "good")

        let replies = await Self.replies(on: client, expecting: Set(cases.map(\.id) + ["good"]))
        #expect(replies[nil] == nil, "a reply without an id: \(replies[nil] ?? [])")
        for item in cases {
            let answers = replies[item.id] ?? []
            #expect(answers.count == 1, "\(item.id): \(answers.count) replies")
            guard case .error(let error)? = answers.first else {
                Issue.record("\(item.id): \(answers)")
                continue
            }
            #expect(error.code == item.code, "\(item.id): \(error)")
            #expect(error.message.contains(item.names), "\(item.id): \(error.message)")
            #expect(!error.isRetryable)
            #expect(!error.message.contains("--"), "\(item.id) names a CLI flag: \(error.message)")
        }
        guard case .jobs? = replies["good"]?.first else {
            Issue.record("LIST limit 1000: \(replies["good"] ?? [])")
            return
        }
        #expect(replies.count == cases.count + 1)

        // Counted as docs/protocol.md says, and logged.
        let address = try #require(coordinator.endpoints.metrics)
        let metrics = MetricsText(try #require(await HTTPFetch.get(address.description, "/metrics")).body)
        #expect(metrics.value("splice_messages_dropped_total", ["endpoint": "api", "reason": "oversized"]) == 3)
        #expect(metrics.value("splice_messages_dropped_total", ["endpoint": "api", "reason": "out-of-range"]) == 4)
        #expect(metrics.value("splice_messages_dropped_total", ["endpoint": "api", "reason": "unknown-type"]) == 1)
        #expect(log.text.contains(#"msg="API request dropped" reason=oversized"#), "\(log.text.suffix(3000))")
        #expect(log.text.contains("over the 4194304-byte limit"))

        await client.close(linger: .zero)
        await context.terminate()
        try await coordinator.stop()
    }
}
