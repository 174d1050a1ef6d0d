import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Webhooks when things go wrong: a receiver that is down, a coordinator killed with a delivery
/// in flight, a receiver that answers 500. The jobs come through the ZeroMQ API (`splice submit`)
/// and get the coordinator's `--webhook-url`; the receiver (`Python/receiver.py`) checks every
/// signature with Python's hmac and logs each delivery; the store's `webhook_deliveries` and the
/// metrics say what the coordinator did.
@Suite("Webhooks under faults", .timeLimit(.minutes(6)))
struct WebhookFaultTests {
    /// One delivery as the receiver logged it.
    struct Received: Decodable {
        var n: Int
        var event: String
        var type: String
        var valid: Bool
        var status: Int?
        var at: Double
    }

    /// `receiver.py PORT SECRET flags…` as a child process.
    static func receiver(port: UInt16, _ flags: [String] = []) async throws -> ChildProcess {
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/SpliceAPITests/Python/receiver.py").path
        let process = try ChildProcess.start(executable: try TestS3.python(),
                                             [script, String(port), APICluster.secret] + flags, logName: "receiver")
        guard await eventually(within: .seconds(20), { process.output.contains("listening") }) else {
            throw TestFailure("the receiver did not start:\n\(process.output)")
        }
        return process
    }

    static func deliveries(_ receiver: ChildProcess) -> [Received] {
        receiver.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{\"n\"") else { return nil }
            return try? JSONDecoder().decode(Received.self, from: Data(line.utf8))
        }
    }

    /// Starts a cluster whose webhooks go to `port`, retried after 1 s, 2 s, 4 s…
    static func cluster(port: UInt16) async throws -> APICluster {
        try await APICluster.start(flags: ["--webhook-url", "http://127.0.0.1:\(port)/hook",
                                           "--webhook-retry-seconds", "1"])
    }

    /// `splice submit` of the test clip (no waiting); the job id.
    static func submit(_ api: APICluster, _ name: String) async throws -> JobID {
        let result = try await SpliceProcess.run(
            ["submit", try await APICluster.clip(), api.cluster.outputPath(name), "--segment-seconds", "1",
             "--coordinator", api.cluster.coordinator.api])
        // Without --wait it prints the job id alone.
        guard result.status == 0, let job = JobID(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("splice submit failed: \(result.stderr)")
        }
        return job
    }

    static func webhookMetric(_ api: APICluster, _ outcome: String) async throws -> Double? {
        guard let address = api.cluster.coordinator.metrics else { return nil }
        guard let response = await HTTPFetch.get(address, "/metrics") else { return nil }
        return MetricsText(response.body).value("splice_webhook_deliveries_total", ["outcome": outcome])
    }

    @Test("the receiver down for a while, then back: every event delivered, once, signed")
    func receiverDown() async throws {
        let port = try Nginx.portForLater()
        let api = try await Self.cluster(port: port)
        let job = try await Self.submit(api, "down.mp4")
        // The job runs to its end while nobody listens: the attempts fail and are recorded.
        #expect(await eventually(within: .seconds(120)) {
            (try? await api.cluster.repository.job(id: job))??.state == .succeeded
        })
        #expect(await eventually(within: .seconds(30)) {
            ((try? await api.cluster.repository.webhookDeliveries(ofJob: job)) ?? []).contains { $0.outcome == .failed }
        })
        let receiver = try await Self.receiver(port: port)
        #expect(await eventually(within: .seconds(60)) { Self.deliveries(receiver).count >= 2 }, "\(receiver.output)")
        try await Task.sleep(for: .seconds(3))  // anything sent twice would be here by now
        let received = Self.deliveries(receiver)
        #expect(received.map(\.type).sorted() == ["job.planned", "job.succeeded"], "\(received.map(\.type))")
        #expect(Set(received.map(\.event)).count == received.count, "an event id arrived twice")
        #expect(received.allSatisfy { $0.valid && $0.status == 200 })
        let recorded = try await api.cluster.repository.webhookDeliveries(ofJob: job)
        #expect(recorded.filter { $0.outcome == .delivered }.count == 2)
        #expect(recorded.filter { $0.outcome == .failed }.allSatisfy { $0.status == nil && $0.error != nil })
        #expect(try await Self.webhookMetric(api, "delivered") == 2)
        #expect((try await Self.webhookMetric(api, "failed") ?? 0) >= 1)
        receiver.signal(SIGKILL)
        try await api.stop()
    }

    @Test("the coordinator SIGKILLed while a delivery is in flight: sent again after its restart, same event id")
    func killedInFlight() async throws {
        let port = try Nginx.portForLater()
        var api = try await Self.cluster(port: port)
        // The first delivery is read and never answered: it is in flight when the coordinator dies.
        let receiver = try await Self.receiver(port: port, ["--hang", "1"])
        let job = try await Self.submit(api, "killed.mp4")
        #expect(await eventually(within: .seconds(60)) { !Self.deliveries(receiver).isEmpty }, "\(receiver.output)")
        let held = try #require(Self.deliveries(receiver).first)
        #expect(held.type == "job.planned" && held.status == nil)
        api.cluster.coordinator.signal(SIGKILL)
        _ = await api.cluster.coordinator.exitStatus()
        try await api.cluster.restartCoordinator()
        #expect(await eventually(within: .seconds(120)) {
            Self.deliveries(receiver).contains { $0.type == "job.succeeded" && $0.status == 200 }
        }, "\(receiver.output)\n\(api.cluster.logs.suffix(4000))")
        let answered = Self.deliveries(receiver).filter { $0.status != nil }
        #expect(answered.contains { $0.event == held.event && $0.valid }, "the in-flight event was not sent again")
        #expect(answered.map(\.type).sorted() == ["job.planned", "job.succeeded"], "\(answered.map(\.type))")
        #expect(try await api.cluster.repository.job(id: job)?.state == .succeeded)
        receiver.signal(SIGKILL)
        try await api.stop()
    }

    @Test("a receiver answering 500: tried again after a growing, jittered wait until it answers 200")
    func receiverFails() async throws {
        let port = try Nginx.portForLater()
        let api = try await Self.cluster(port: port)
        let receiver = try await Self.receiver(port: port, ["--fail", "4"])
        let job = try await Self.submit(api, "fails.mp4")
        #expect(await eventually(within: .seconds(150)) {
            Self.deliveries(receiver).contains { $0.type == "job.succeeded" && $0.status == 200 }
        }, "\(receiver.output)")
        let planned = Self.deliveries(receiver).filter { $0.type == "job.planned" }
        #expect(planned.map(\.status) == [500, 500, 500, 500, 200], "\(planned.map(\.status))")
        #expect(Set(planned.map(\.event)).count == 1, "one event, tried five times")
        // Retry k waits 1 s · 2^(k−1) ± 50 %, plus up to the sender's 1 s round: the 3rd and 4th
        // gaps are at least 2 s and 4 s (a fixed 1 s retry would never wait that long).
        let gaps = zip(planned.dropFirst(), planned).map { $0.at - $1.at }
        #expect(gaps.count == 4)
        if gaps.count == 4 {
            #expect(gaps[0] >= 0.45 && gaps[1] >= 0.95 && gaps[2] >= 1.95 && gaps[3] >= 3.95, "\(gaps)")
            #expect(gaps[0] < 10, "\(gaps)")
        }
        let recorded = try await api.cluster.repository.webhookDeliveries(ofJob: job).filter { $0.type == "job.planned" }
        #expect(recorded.map(\.status) == [500, 500, 500, 500, 200])
        #expect(recorded.map(\.outcome) == [.failed, .failed, .failed, .failed, .delivered])
        #expect(recorded.map(\.attempt) == [1, 2, 3, 4, 5])
        receiver.signal(SIGKILL)
        try await api.stop()
    }
}
