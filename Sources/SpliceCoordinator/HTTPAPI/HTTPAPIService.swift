import SpliceConcurrency
import SpliceDaemon
import SpliceHTTP
import SpliceLog

/// The HTTP API's part of the coordinator's service group: its server is bound when the
/// coordinator starts (a port in use fails the start, like every endpoint), this service runs the
/// event streams and, on graceful shutdown — first of all, since it is the newest door — ends
/// them and closes the server.
final class HTTPAPIService: Service {
    let name = "http-api"
    let server: HTTPServer
    private let events: JobEventHub
    private let hub = StoppableTask()

    /// What the HTTP API's server accepts (docs/api.md, Limits).
    static func limits(maxConnections: Int) -> HTTPServer.Limits {
        var limits = HTTPServer.Limits()
        // Every method reaches the router, which answers 405 with the route's own `Allow`.
        limits.methods = Set(HTTPMethod.allCases)
        limits.maxBodyBytes = 1 << 20
        limits.unknownMethodsNotAllowed = true
        limits.maxConnections = maxConnections
        limits.maxRequestsPerConnection = 1000
        limits.maxHeadBytes = 16 * 1024
        limits.maxTargetBytes = 4096
        limits.headDeadline = .seconds(10)
        limits.bodyDeadline = .seconds(10)
        limits.handlerDeadline = .seconds(15)
        limits.writeDeadline = .seconds(10)
        return limits
    }

    init(server: HTTPServer, events: JobEventHub) {
        self.server = server
        self.events = events
    }

    /// Serves the event streams until shutdown (or cancellation).
    func run() async throws {
        await hub.run { await self.events.run() }
    }

    func shutdown() async {
        events.stop()
        await hub.stop()
        await server.close()
    }
}
