import Foundation
import SpliceCoordinator
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

/// The coordinator-restarted phase of Deploy/test-hosts.sh on loopback: a transfer-mode worker
/// (CURVE on, joined with a join token) is encoding when the coordinator stops (SIGTERM's
/// graceful shutdown) and a new one starts on the same keys, database and addresses.
@Suite("Transfer mode across a coordinator restart", .timeLimit(.minutes(5)))
struct TransferRestartTests {
    @Test("a result a transfer worker finishes after the coordinator restarted is fetched by the new one, not encoded again")
    func resultAfterRestart() async throws {
        let server = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let member = try CurveKeyPair.generate()
        func configure(_ configuration: inout CoordinatorConfiguration) {
            configuration.keys = server
            configuration.adminKeys = [admin.publicKey]
        }
        let first = try await CoordinatorUnderTest.start { configuration in
            configure(&configuration)
            configuration.dataEndpoint = loopback
        }
        let data = try #require(first.endpoints.data, "no data endpoint bound")
        let context = try WireContext()
        let client = try await TestClient.connect(
            to: first.endpoints.api, curve: .client(keys: admin, serverKey: server.publicKey), context: context)
        let create = CreateJoinToken(name: "restart", uses: 1, ttlSeconds: 600)
        guard case .joinToken(let created) = try await client.request(.createJoinToken(create)),
              let token = created.token else {
            throw TestFailure("JOIN_TOKEN_CREATE failed")
        }
        let scratch = Fixtures.temporaryDirectory("restart-scratch")
        let worker = try RunningWorker.start(coordinator: first.endpoints.workers) { configuration in
            configuration.spool = nil
            configuration.scratch = scratch
            configuration.dataEndpoint = data
            configuration.curve = (keys: member, serverKey: server.publicKey)
            configuration.joinToken = token
        }

        // Two 4 s segments (the planner fills two lanes) at x264's `veryslow` on one thread, about
        // 1.5 s each here: the first is still encoding when the coordinator stops just after the
        // worker has its excerpt (checked below, not assumed).
        let source = try await TestMedia.clip(seconds: 8)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("restart.mp4").path
        let request = TranscodeRequest(video: VideoSettings(codec: .h264, preset: "veryslow"), audio: nil,
                                       fileType: .mp4, segmentDuration: MediaTime(seconds: 8), overwrite: false)
        let submit = SubmitJob(input: source, output: output, export: try JSONPayload(encoding: request),
                               submissionKey: "restart")
        guard case .submitted(let submitted) = try await client.request(.submit(submit)) else {
            throw TestFailure("SUBMIT failed")
        }
        let job = submitted.job
        func excerptFetched() -> Bool {
            ((try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []).contains { $0.hasPrefix("x-") }
        }
        #expect(await eventually(within: .seconds(60)) { excerptFetched() }, "the worker never fetched its excerpt")
        await client.close()
        try await first.stop()
        let stopped = try await first.repository.segments(ofJob: job)
        try #require(stopped.contains { $0.state == .leased },
                     "no segment was encoding at the restart; the test needs a slower encode: \(stopped.map(\.state))")

        let second = try await CoordinatorUnderTest.start(database: first.database, spool: first.spool) {
            configuration in
            configure(&configuration)
            configuration.workersEndpoint = first.endpoints.workers
            configuration.apiEndpoint = first.endpoints.api
            configuration.dataEndpoint = data
        }
        // The new coordinator fetches the result the worker finished after the restart. Without
        // that, the fetch stalls out, the lease (30 s) runs out and the segment is encoded again.
        #expect(await eventually(within: .seconds(120)) {
            (try? await second.repository.job(id: job))?.state.isTerminal == true
        })
        #expect(try await second.repository.job(id: job)?.state == .succeeded)
        let segments = try await second.repository.segments(ofJob: job)
        #expect(!segments.isEmpty && segments.allSatisfy { $0.attempt == 1 },
                "a segment was encoded again after the restart: attempts \(segments.map(\.attempt))")
        #expect(try await TestMedia.frames(output) == (try await TestMedia.frames(source)))
        await worker.stop()
        try await second.stop()
    }
}
