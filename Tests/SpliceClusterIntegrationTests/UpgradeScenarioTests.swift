import Foundation
import SpliceTestSupport
import Testing

// Upgrades without downtime (docs/deploy.md, Upgrading): today's `splice coordinator` with a
// `splice worker` of the previous worker-protocol release — the binary Deploy/build-compat.sh
// builds from Deploy/compat-commit with `git worktree` and caches — finishing a job exactly as
// `splice transcode` would (the ClusterEndToEndTests oracle: decoded pictures and samples), and
// `splice workers` saying which version each worker speaks. Skipped when that build is absent;
// `Deploy/test.sh --slow` builds it and runs this suite.

@Suite("Upgrades: a worker of the previous release with today's coordinator", .timeLimit(.minutes(8)),
       .enabled(if: CompatBinary.executable != nil, Comment(rawValue: CompatBinary.skipReason)))
struct UpgradeScenarioTests {
    @Test("a previous-release worker encodes every segment of a job for today's coordinator, exactly; splice workers shows it speaking 2 and today's worker 3")
    func previousReleaseWorker() async throws {
        let previous = try #require(CompatBinary.executable, Comment(rawValue: CompatBinary.skipReason))
        var cluster = try await LocalCluster.start(workers: 0)
        let old = try await cluster.addSpoolWorker(named: "previous-release", binary: previous)
        #expect(!old.process.output.contains("dropped a message"), "the old worker refused the coordinator's messages")

        // Alone, so every segment is its.
        let output = cluster.outputPath("previous-release-worker.mp4")
        let submit = try await cluster.submitWaiting(output)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        try await EndToEndMedia.expectSameAsTranscode(output)
        let oldID = try #require(try await cluster.workerID(named: old.name))
        let done = try await cluster.segmentsDone(job: job)
        #expect(done.count == EndToEndMedia.segments, "each segment committed exactly once")
        #expect(Set(done.values) == [oldID], "segments done by another worker: \(done)")

        try await cluster.addSpoolWorker(named: "this-release")
        let api = cluster.coordinator.api
        let json = try await SpliceProcess.run(["workers", "--json", "--coordinator", api])
        #expect(json.status == 0, "\(json.stderr)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let versions = Dictionary(listed.compactMap { worker in
            (worker["name"] as? String).map { ($0, worker["protocolVersion"] as? Int ?? 0) }
        }, uniquingKeysWith: { first, _ in first })
        #expect(versions == ["previous-release": 2, "this-release": 3], "\(json.stdout)")

        let table = try await SpliceProcess.run(["workers", "--coordinator", api])
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        let column = try #require(rows.first?.firstIndex(of: "PROTOCOL"), "no PROTOCOL column: \(table.stdout)")
        let shown = Dictionary(rows.dropFirst().compactMap { row in row.count > column ? (String(row[1]), String(row[column])) : nil },
                               uniquingKeysWith: { first, _ in first })
        #expect(shown == ["previous-release": "2", "this-release": "3"], "\(table.stdout)")
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }
}
