import Foundation
import SpliceConcurrency

/// A small, strict, read-only HTTP/1.1 server for operators: metrics, health checks, a status
/// page. Plain POSIX sockets on a thread of its own (`poll(2)`), never on Swift's cooperative
/// pool; the handler runs as a task and must answer promptly (it is cut off after
/// ``Limits/handlerDeadline``).
///
/// - GET and HEAD only (405 for other known methods, 501 for unknown ones), HTTP/1.0 and 1.1.
/// - One request per connection (`Connection: close`).
/// - Limits on the head (8 KiB, 431), the target (2 KiB, 414), the time to send the head (5 s,
///   408: slowloris), the time to answer (10 s, 503) and to read the answer, and on connections
///   (64; beyond that 503 at once).
/// - Anything malformed is answered 400 with the reason and closed. See ``RequestParser``.
///
///     let server = try HTTPServer.start(on: HTTPAddress(parsing: "127.0.0.1:9450")!) { request in
///         request.path == "/healthz" ? .text("ok\n") : .text("not found\n", status: .notFound)
///     }
///     …
///     await server.close()
public final class HTTPServer: Sendable {
    /// Answers a request that passed every check.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// The server's limits; the defaults suit a metrics endpoint.
    public struct Limits: Sendable, Hashable {
        /// The request line and header fields together.
        public var maxHeadBytes = 8192
        public var maxTargetBytes = 2048
        public var maxHeaderFields = 64
        /// Connections open at once; the next one is answered 503 and closed.
        public var maxConnections = 64
        /// From accepting a connection to its complete head.
        public var headDeadline: Duration = .seconds(5)
        /// From a complete head to the handler's answer.
        public var handlerDeadline: Duration = .seconds(10)
        /// For the client to read the answer.
        public var writeDeadline: Duration = .seconds(10)
        /// After the answer: how long bytes the client still sends are read and dropped.
        public var lingerDeadline: Duration = .seconds(1)

        public init() {}

        var parserLimits: RequestParser.Limits {
            RequestParser.Limits(maxHeadBytes: maxHeadBytes, maxTargetBytes: maxTargetBytes,
                                 maxHeaderFields: maxHeaderFields)
        }
    }

    /// What the server has done since it started.
    public struct Statistics: Sendable, Hashable {
        public var accepted = 0
        /// Answers by status code (refusals included).
        public var responses: [Int: Int] = [:]
        /// Connections refused because `maxConnections` were open.
        public var refusedOverCapacity = 0
        /// Connections closed because their head did not arrive within the deadline.
        public var headTimeouts = 0
        /// Requests answered 503 because the handler took too long.
        public var handlerTimeouts = 0

        public init() {}
    }

    /// Where it listens (a requested port 0 resolved).
    public let address: HTTPAddress
    private let shared: ServerLoop.Shared

    private init(address: HTTPAddress, shared: ServerLoop.Shared) {
        self.address = address
        self.shared = shared
    }

    /// Binds `address` and starts serving on a thread of its own. Throws when the address is in
    /// use or cannot be bound.
    public static func start(on address: HTTPAddress, limits: Limits = Limits(), handler: @escaping Handler)
        throws(HTTPServerError) -> HTTPServer
    {
        let wake: WakePipe
        do {
            wake = try WakePipe()
        } catch {
            throw HTTPServerError(.system, errno: error.errno, "cannot make the server's wake-up pipe: \(error)")
        }
        let (fd, bound) = try ListeningSocket.open(address, backlog: Int32(min(limits.maxConnections, 1024)))
        let shared = ServerLoop.Shared(wake: wake)
        let loop = ServerLoop(listenFD: fd, limits: limits, handler: handler, shared: shared)
        let thread = Thread { loop.run() }
        thread.name = "splice.http"
        thread.start()
        return HTTPServer(address: bound, shared: shared)
    }

    /// Counts since start.
    public var statistics: Statistics {
        shared.statistics.withLock { $0 }
    }

    /// Stops listening and closes every connection (answers in progress are dropped); returns
    /// once the server's thread has ended. Safe to call more than once.
    public func close() async {
        shared.stopping.store(true, ordering: .releasing)
        shared.wake.signal()
        await shared.finished.wait()
    }

    deinit {
        // Never leave the thread running: a server dropped without close() stops on its own.
        shared.stopping.store(true, ordering: .releasing)
        shared.wake.signal()
    }
}
