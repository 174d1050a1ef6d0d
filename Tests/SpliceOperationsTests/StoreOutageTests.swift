import Foundation
import SpliceHTTP
import SpliceLog
import SpliceStore
import SpliceTestSupport
import Testing
import SpliceCoordinator

/// The operators' endpoint while the database is down: it must answer at once and say so, not
/// hang a scrape or a probe for as long as PostgreSQL takes to come back.
@Suite("Operators' endpoint during a database outage", .timeLimit(.minutes(3)))
struct StoreOutageTests {
    @Test("scrapes and probes answer within seconds: store down, database gauges absent, alive but not ready")
    func outage() async throws {
        let server = try await TestPostgres.makePrivateServer()
        let database = try await server.createDatabase("splice")
        var configuration = CoordinatorConfiguration(
            database: .server(database), spool: Fixtures.temporaryDirectory("outage-spool"),
            workersEndpoint: loopback, apiEndpoint: loopback, pollInterval: .milliseconds(200),
            logger: Logger(level: .error))
        configuration.metricsEndpoint = HTTPAddress(parsing: "127.0.0.1:0")
        let coordinator = Coordinator(configuration: configuration)
        let running = Task { try await coordinator.run() }
        let endpoints = try await coordinator.ready()
        let address = try #require(endpoints.metrics).description

        // Healthy first. A scrape gives the database one second, which a loaded test machine (the
        // whole suite on two cores) can miss now and then: the baseline is that it answers, soon.
        #expect(await eventually(within: .seconds(30)) {
            await HTTPFetch.get(address, "/metrics").map { MetricsText($0.body).value("splice_store_up") } == 1
        })
        let healthy = MetricsText(try #require(await HTTPFetch.get(address, "/metrics")).body)
        #expect(healthy.value("splice_jobs", ["state": "queued"]) == 0)
        #expect(await eventually(within: .seconds(30)) { await HTTPFetch.get(address, "/readyz")?.status == 200 })

        try await server.stop(mode: .immediate)
        try await Task.sleep(for: .milliseconds(1500))  // past the second a database answer is reused
        let clock = ContinuousClock()
        let start = clock.now
        let scrape = try #require(await HTTPFetch.get(address, "/metrics", timeout: .seconds(20)))
        #expect(clock.now - start < .seconds(5), "a scrape during the outage took \(clock.now - start)")
        let down = MetricsText(scrape.body)
        #expect(scrape.status == 200)
        #expect(down.value("splice_store_up") == 0)
        #expect(down.value("splice_jobs") == nil && down.value("splice_queue_segments") == nil)
        #expect(down.value("splice_segments_completed_total") == 0)  // what is in memory is still there
        #expect(down.value("process_resident_memory_bytes") != nil)

        let probeStart = clock.now
        let ready = try #require(await HTTPFetch.get(address, "/readyz", timeout: .seconds(20)))
        #expect(ready.status == 503 && ready.body.contains("database"), "\(ready.body)")
        #expect(await HTTPFetch.get(address, "/healthz")?.status == 200)
        let page = try #require(await HTTPFetch.get(address, "/", timeout: .seconds(20)))
        #expect(page.status == 200 && page.body.contains("not answering"))
        #expect(clock.now - probeStart < .seconds(10))

        try await server.start()
        #expect(await eventually(within: .seconds(60)) { await HTTPFetch.get(address, "/readyz")?.status == 200 })
        #expect(MetricsText(try #require(await HTTPFetch.get(address, "/metrics")).body).value("splice_store_up") == 1)

        await coordinator.shutdown()
        try await running.value
        #expect(await HTTPFetch.get(address, "/healthz", timeout: .seconds(2)) == nil)  // closed with the coordinator
        try? await server.stop()
    }
}
