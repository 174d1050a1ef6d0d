import Foundation
import SpliceConcurrency

/// A small, strict HTTP/1.1 server: the operators' endpoint (metrics, health checks, a status
/// page: read-only, the defaults) and the coordinator's HTTP API (POST bodies, kept-alive
/// connections, Server-Sent Events). Plain POSIX sockets on a thread of its own (`poll(2)`), never
/// on Swift's cooperative pool; the handler runs as a task and must answer promptly (it is cut off
/// after ``Limits/handlerDeadline``).
///
/// - The methods of ``Limits/methods``: GET and HEAD by default (405 for other known methods,
///   listing the served ones in `Allow`; 501 for unknown ones), HTTP/1.0 and 1.1.
/// - Bodies only when ``Limits/maxBodyBytes`` is above 0, never on GET or HEAD, only with a
///   `Content-Length` (411 for `Transfer-Encoding`), at most that many bytes (413 at once, before
///   the body is read); `Expect: 100-continue` is answered.
/// - One request per connection (`Connection: close`) unless ``Limits/maxRequestsPerConnection``
///   allows more: then HTTP/1.1 connections stay open between requests (pipelining included).
/// - Limits on the head (8 KiB, 431), the target (2 KiB, 414), the time to send the head (5 s,
///   408: slowloris) and the body (10 s, 408), the time to answer (10 s, 503) and to read the
///   answer, and on connections (64; beyond that 503 at once).
/// - Anything malformed is answered 400 with the reason and closed. See ``RequestParser``.
/// - A response may stream its body (``HTTPResponseStream``); a client that stops reading is
///   dropped once ``Limits/maxStreamBufferBytes`` wait for it.
///
///     let server = try HTTPServer.start(on: HTTPAddress(parsing: "127.0.0.1:9450")!) { request in
///         request.path == "/healthz" ? .text("ok\n") : .text("not found\n", status: .notFound)
///     }
///     …
///     await server.close()
public final class HTTPServer: Sendable {
    /// Answers a request that passed every check.
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse
    /// Words the server's own refusals (400, 408, 411, 413, 414, 431, 501, 503, 505) from their
    /// status and reason: plain text by default (``HTTPResponse/refusal(_:_:)``); the HTTP API
    /// answers them as problem details.
    public typealias Refusal = @Sendable (HTTPStatus, String) -> HTTPResponse

    /// The server's limits; the defaults suit a metrics endpoint.
    public struct Limits: Sendable, Hashable {
        /// The request line and header fields together.
        public var maxHeadBytes = 8192
        public var maxTargetBytes = 2048
        public var maxHeaderFields = 64
        /// Connections open at once; the next one is answered 503 and closed.
        public var maxConnections = 64
        /// The methods served (GET and HEAD: read-only).
        public var methods: Set<HTTPMethod> = [.get, .head]
        /// The largest request body read (POST only); 0 takes none.
        public var maxBodyBytes = 0
        /// Answers on one connection before it is closed; 1 closes after every answer.
        public var maxRequestsPerConnection = 1
        /// Bytes of a streamed response waiting for a client that does not read, before it is dropped.
        public var maxStreamBufferBytes = 1 << 20
        /// From accepting a connection (or the end of the previous answer on it) to its complete
        /// head; a kept-alive connection with nothing sent by then is closed.
        public var headDeadline: Duration = .seconds(5)
        /// From a complete head to its complete body.
        public var bodyDeadline: Duration = .seconds(10)
        /// From a complete head to the handler's answer.
        public var handlerDeadline: Duration = .seconds(10)
        /// For the client to read the answer.
        public var writeDeadline: Duration = .seconds(10)
        /// After the answer: how long bytes the client still sends are read and dropped.
        public var lingerDeadline: Duration = .seconds(1)
        /// Answers a method it does not know (`QUERY`) 405 with `Allow`, as one it knows but does
        /// not serve, instead of 501 (RFC 9110's SHOULD): an API whose document lists every
        /// method it serves, judged by clients that read any 5xx as its fault (docs/api.md).
        public var unknownMethodsNotAllowed = false

        public init() {}

        var parserLimits: RequestParser.Limits {
            RequestParser.Limits(maxHeadBytes: maxHeadBytes, maxTargetBytes: maxTargetBytes,
                                 maxHeaderFields: maxHeaderFields, methods: methods, maxBodyBytes: maxBodyBytes,
                                 unknownMethodsNotAllowed: unknownMethodsNotAllowed)
        }
    }

    /// What the server has done since it started.
    public struct Statistics: Sendable, Hashable {
        public var accepted = 0
        /// Answers by status code (refusals included).
        public var responses: [Int: Int] = [:]
        /// Connections refused because `maxConnections` were open.
        public var refusedOverCapacity = 0
        /// Connections closed because their head (or body) did not arrive within the deadline.
        public var headTimeouts = 0
        /// Streamed responses dropped because the client fell too far behind.
        public var streamsOverflowed = 0
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
    public static func start(on address: HTTPAddress, limits: Limits = Limits(),
                             refusal: @escaping Refusal = HTTPResponse.refusal, handler: @escaping Handler)
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
        let loop = ServerLoop(listenFD: fd, limits: limits, handler: handler, refusal: refusal, shared: shared)
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
