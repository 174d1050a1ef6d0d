#if canImport(Glibc)
import Glibc
#endif
import SpliceConcurrency
import Synchronization

/// The server's thread: one `poll(2)` loop over the listening socket, a wake-up pipe and every
/// connection, all non-blocking. Connections and their parsers are confined to this thread
/// (hence `@unchecked Sendable`); handlers run as tasks and hand their responses back through
/// `Shared`, waking the loop; so do the writers of streamed responses. A connection lives through
///
///     reading (head deadline, then body deadline) → handling (handler deadline) → writing (write
///         deadline) → reading again (kept alive: the next request) or lingering (a short drain
///         after shutdown(SHUT_WR), so the client reads the answer) → closed
///
/// or, for a streamed response, writing → streaming (as long as the stream and the client last;
/// a write stall longer than the write deadline ends it) → lingering. A connection is kept alive
/// only while the client wants it (HTTP/1.1 without `Connection: close`), up to
/// `maxRequestsPerConnection` answers, and never after a refusal or a timeout. A deadline that
/// passes ends it with 408 (a request that began arriving), 503 (handler), or a plain close (an
/// idle kept-alive connection, a slow reader).
final class ServerLoop: @unchecked Sendable {
    /// What handler tasks, stream writers and the public side share with the loop.
    final class Shared: Sendable {
        let completions = Mutex<[(UInt64, HTTPResponse)]>([])
        /// Connections whose streams have bytes or an end to send.
        let readyStreams = Mutex<Set<UInt64>>([])
        let stopping = Atomic<Bool>(false)
        let statistics = Mutex(HTTPServer.Statistics())
        let wake: WakePipe
        let finished = Latch()

        init(wake: WakePipe) {
            self.wake = wake
        }

        func streamReady(_ id: UInt64) {
            let first = readyStreams.withLock { $0.insert(id).inserted }
            if first { wake.signal() }
        }
    }

    private enum Phase {
        case reading(RequestParser)
        case handling(head: Bool, close: Bool)
        case writing([UInt8], sent: Int, close: Bool, stream: HTTPResponseStream?)
        case streaming(HTTPResponseStream, pending: [UInt8], sent: Int, finished: Bool)
        case lingering(discarded: Int)
    }

    private struct Connection {
        let fd: Int32
        var phase: Phase
        var deadline: ContinuousClock.Instant
        /// Answers sent on it so far.
        var answered = 0
        /// Bytes a streaming client sent, read and dropped.
        var droppedInput = 0
    }

    let shared: Shared
    private let listenFD: Int32
    private let limits: HTTPServer.Limits
    private let handler: HTTPServer.Handler
    private let refusal: HTTPServer.Refusal
    private var connections: [UInt64: Connection] = [:]
    private var nextID: UInt64 = 0
    private var acceptPausedUntil = ContinuousClock.now
    private var readBuffer = [UInt8](repeating: 0, count: 16384)
    private static let lingerBytes = 64 * 1024
    /// What a streaming connection reads (and drops) from its client before it is closed.
    private static let streamInputBytes = 64 * 1024

    init(listenFD: Int32, limits: HTTPServer.Limits, handler: @escaping HTTPServer.Handler,
         refusal: @escaping HTTPServer.Refusal, shared: Shared) {
        self.listenFD = listenFD
        self.limits = limits
        self.handler = handler
        self.refusal = refusal
        self.shared = shared
    }

    // MARK: - The loop

    func run() {
        defer {
            for (id, _) in connections { finish(id) }
            close(listenFD)
            shared.finished.open()
        }
        var fds: [pollfd] = []
        var ids: [UInt64] = []
        while !shared.stopping.load(ordering: .acquiring) {
            let now = ContinuousClock.now
            fds.removeAll(keepingCapacity: true)
            ids.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: shared.wake.fd, events: Int16(POLLIN), revents: 0))
            fds.append(pollfd(fd: now >= acceptPausedUntil ? listenFD : -1, events: Int16(POLLIN), revents: 0))
            var earliest = now + .seconds(1)
            for (id, connection) in connections {
                let events: Int16 = switch connection.phase {
                case .reading, .lingering: Int16(POLLIN)
                case .handling: 0  // errors and hang-ups are reported regardless
                case .writing: Int16(POLLOUT)
                case .streaming(_, let pending, _, _): Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT))
                }
                fds.append(pollfd(fd: connection.fd, events: events, revents: 0))
                ids.append(id)
                earliest = min(earliest, connection.deadline)
            }
            if acceptPausedUntil > now { earliest = min(earliest, acceptPausedUntil) }
            let wait = max(0, min(1000, (earliest - now).wholeMilliseconds + 1))
            let ready = poll(&fds, nfds_t(fds.count), Int32(wait))
            if ready < 0 && errno != EINTR {
                usleep(10_000)  // cannot happen with valid descriptors; never spin
                continue
            }
            if fds[0].revents != 0 { shared.wake.drain() }
            deliverCompletions()
            pumpStreams()
            if fds[1].revents != 0 { acceptAll() }
            for (index, id) in ids.enumerated() where fds[index + 2].revents != 0 {
                service(id, revents: fds[index + 2].revents)
            }
            expire(now: .now)
        }
    }

    // MARK: - Accepting

    private func acceptAll() {
        for _ in 0..<64 {
            switch ListeningSocket.accept(listenFD) {
            case .success(let fd):
                count { $0.accepted += 1 }
                guard connections.count < limits.maxConnections else {
                    // Over the cap: say so at once rather than leave the client waiting.
                    count { $0.refusedOverCapacity += 1 }
                    let busy = refused(.serviceUnavailable, "too many connections; try again")
                    _ = ListeningSocket.send(fd, busy.serialized(head: false, date: HTTPDate.now(), close: true)[...])
                    close(fd)
                    continue
                }
                nextID += 1
                connections[nextID] = Connection(
                    fd: fd, phase: .reading(RequestParser(limits: limits.parserLimits)),
                    deadline: .now + limits.headDeadline)
            case .failure(let error):
                switch error.value {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    acceptPausedUntil = .now + .milliseconds(100)  // out of descriptors: do not spin
                    return
                default:
                    return  // EAGAIN: nothing more waiting
                }
            }
        }
    }

    // MARK: - Connections

    private func service(_ id: UInt64, revents: Int16) {
        guard var connection = connections[id] else { return }
        switch connection.phase {
        case .reading(var parser):
            let count = read(connection.fd, &readBuffer, readBuffer.count)
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                finish(id)  // the client left (before finishing its request, or between requests)
                return
            }
            guard count > 0 else { return }
            let waitedForBody = parser.awaitsBody
            let outcome = parser.feed(readBuffer[0..<count])
            if !waitedForBody && parser.awaitsBody {
                // The head is in; the body has its own deadline from here.
                connection.deadline = .now + limits.bodyDeadline
            }
            if parser.takeContinue() {
                _ = ListeningSocket.send(connection.fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)[...])
            }
            connection.phase = .reading(parser)
            connections[id] = connection
            handle(id, outcome)
        case .handling:
            if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { finish(id) }
        case .writing:
            if revents & Int16(POLLERR | POLLNVAL) != 0 {
                finish(id)
            } else {
                write(id)
            }
        case .streaming(let stream, let pending, let sent, let finished):
            if revents & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0 {
                // A streaming client has nothing to say; a read of 0 (or an error) is its leaving.
                let count = read(connection.fd, &readBuffer, readBuffer.count)
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) || revents & Int16(POLLERR | POLLNVAL) != 0 {
                    finish(id)
                    return
                }
                if count > 0 {
                    connection.droppedInput += count
                    if connection.droppedInput > Self.streamInputBytes {
                        finish(id)
                        return
                    }
                    connections[id] = connection
                }
            }
            if revents & Int16(POLLOUT) != 0 {
                sendStream(id, stream: stream, pending: pending, sent: sent, finished: finished)
            }
        case .lingering(let discarded):
            let count = read(connection.fd, &readBuffer, readBuffer.count)
            if count > 0 && discarded + count < Self.lingerBytes {
                connection.phase = .lingering(discarded: discarded + count)
                connections[id] = connection
            } else if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) || count > 0 {
                finish(id)
            }
        }
    }

    /// Acts on what the parser made of the bytes so far.
    private func handle(_ id: UInt64, _ outcome: RequestParser.Outcome) {
        switch outcome {
        case .incomplete:
            break
        case .refuse(let status, let reason):
            // The request's framing cannot be trusted: answer and close.
            answer(id, refused(status, reason), head: false, close: true)
        case .request(let request):
            dispatch(id, request)
        }
    }

    private func dispatch(_ id: UInt64, _ request: HTTPRequest) {
        guard var connection = connections[id] else { return }
        if case .reading(let parser) = connection.phase, !parser.leftover.isEmpty {
            previousLeftover[id] = Array(parser.leftover)
        }
        let close = request.wantsClose || connection.answered + 1 >= limits.maxRequestsPerConnection
            || shared.stopping.load(ordering: .acquiring)
        connection.phase = .handling(head: request.method == .head, close: close)
        connection.deadline = .now + limits.handlerDeadline
        connections[id] = connection
        let (handler, shared) = (self.handler, self.shared)
        Task {
            let response = await handler(request)
            shared.completions.withLock { $0.append((id, response)) }
            shared.wake.signal()
        }
    }

    private func deliverCompletions() {
        let completed = shared.completions.withLock { completions in
            defer { completions.removeAll() }
            return completions
        }
        for (id, response) in completed {
            // A connection that timed out or left meanwhile is gone: the late answer is dropped
            // (and a stream it carried is told so).
            guard let connection = connections[id], case .handling(let head, let close) = connection.phase else {
                response.stream?.closed()
                continue
            }
            answer(id, response, head: head, close: close)
        }
    }

    private func answer(_ id: UInt64, _ response: HTTPResponse, head: Bool, close: Bool) {
        guard var connection = connections[id] else {
            response.stream?.closed()
            return
        }
        count { $0.responses[response.status.code, default: 0] += 1 }
        connection.answered += 1
        let stream = head ? nil : response.stream
        if head { response.stream?.closed() }
        connection.phase = .writing(response.serialized(head: head, date: HTTPDate.now(), close: close), sent: 0,
                                    close: close || response.stream != nil, stream: stream)
        connection.deadline = .now + limits.writeDeadline
        connections[id] = connection
        write(id)
    }

    private func write(_ id: UInt64) {
        guard var connection = connections[id], case .writing(let bytes, let sent, let close, let stream) = connection.phase
        else { return }
        guard let written = ListeningSocket.send(connection.fd, bytes[sent...]) else {
            finish(id)
            return
        }
        if sent + written < bytes.count {
            connection.phase = .writing(bytes, sent: sent + written, close: close, stream: stream)
            connections[id] = connection
            return
        }
        if let stream {
            // The head is out: from here the body is what the stream's writer sends.
            connection.phase = .streaming(stream, pending: [], sent: 0, finished: false)
            connection.deadline = .now + .seconds(86_400 * 365)
            connections[id] = connection
            stream.attach(id: id, shared: shared, limit: limits.maxStreamBufferBytes)
            return
        }
        if !close {
            // Kept alive: the next request, which may already be here (pipelined).
            var parser = RequestParser(limits: limits.parserLimits)
            let leftover = previousLeftover.removeValue(forKey: id) ?? []
            connection.phase = .reading(parser)
            connection.deadline = .now + limits.headDeadline
            connections[id] = connection
            if !leftover.isEmpty {
                let outcome = parser.feed(leftover)
                if parser.awaitsBody { connection.deadline = .now + limits.bodyDeadline }
                connection.phase = .reading(parser)
                connections[id] = connection
                handle(id, outcome)
            }
            return
        }
        linger(id)
    }

    /// All sent and the connection ends: half-close and read what the client still sends for a
    /// moment, so closing does not reset the connection before it has read the answer.
    private func linger(_ id: UInt64) {
        guard var connection = connections[id] else { return }
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.phase = .lingering(discarded: 0)
        connection.deadline = .now + limits.lingerDeadline
        connections[id] = connection
    }

    /// Bytes that arrived after a request on a kept-alive connection, until its answer is out.
    private var previousLeftover: [UInt64: [UInt8]] = [:]

    // MARK: - Streams

    /// Moves what writers queued onto their connections.
    private func pumpStreams() {
        let ready = shared.readyStreams.withLock { ready in
            defer { ready.removeAll() }
            return ready
        }
        for id in ready {
            guard let connection = connections[id],
                  case .streaming(let stream, let pending, let sent, let finished) = connection.phase else { continue }
            sendStream(id, stream: stream, pending: pending, sent: sent, finished: finished)
        }
    }

    private func sendStream(_ id: UInt64, stream: HTTPResponseStream, pending: [UInt8], sent: Int, finished: Bool) {
        guard var connection = connections[id] else { return }
        let taken = stream.take(pending: pending.count - sent)
        if taken.overflowed {
            count { $0.streamsOverflowed += 1 }
            finish(id)
            return
        }
        var pending = sent > 0 ? Array(pending[sent...]) : pending
        pending += taken.bytes
        let finished = finished || taken.finished
        var sent = 0
        if !pending.isEmpty {
            guard let written = ListeningSocket.send(connection.fd, pending[...]) else {
                finish(id)
                return
            }
            sent = written
        }
        if sent == pending.count {
            if finished {
                connection.phase = .streaming(stream, pending: [], sent: 0, finished: true)
                connections[id] = connection
                stream.closed()
                linger(id)
                return
            }
            connection.phase = .streaming(stream, pending: [], sent: 0, finished: false)
            connection.deadline = .now + .seconds(86_400 * 365)
        } else {
            // The client is not keeping up: it has the write deadline to take the rest.
            if sent > 0 || connection.deadline > .now + limits.writeDeadline {
                connection.deadline = .now + limits.writeDeadline
            }
            connection.phase = .streaming(stream, pending: pending, sent: sent, finished: finished)
        }
        connections[id] = connection
    }

    // MARK: - Deadlines

    private func expire(now: ContinuousClock.Instant) {
        for (id, connection) in connections where connection.deadline <= now {
            switch connection.phase {
            case .reading(let parser):
                if parser.buffer.isEmpty && connection.answered > 0 {
                    finish(id)  // a kept-alive connection left idle: closed without a word
                    continue
                }
                // Too slow to send a request (slowloris, head or body): one try at a 408, then gone.
                count { $0.headTimeouts += 1 }
                let late = refused(.requestTimeout, parser.awaitsBody ? "the request body did not arrive in time"
                                                                       : "the request head did not arrive in time")
                _ = ListeningSocket.send(connection.fd, late.serialized(head: false, date: HTTPDate.now(), close: true)[...])
                finish(id)
            case .handling:
                count { $0.handlerTimeouts += 1 }
                answer(id, refused(.serviceUnavailable, "the answer took too long; try again"), head: false, close: true)
            case .writing, .lingering, .streaming:
                finish(id)
            }
        }
    }

    private func finish(_ id: UInt64) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        previousLeftover[id] = nil
        close(connection.fd)
        switch connection.phase {
        case .streaming(let stream, _, _, _): stream.closed()
        case .writing(_, _, _, let stream?): stream.closed()
        default: break
        }
    }

    /// The server's answer to a request it refuses, as the refusal renderer words it; 405 lists
    /// the methods served.
    private func refused(_ status: HTTPStatus, _ reason: String) -> HTTPResponse {
        var response = refusal(status, reason)
        if status == .methodNotAllowed {
            let served = HTTPMethod.allCases.filter { limits.methods.contains($0) }.map(\.rawValue)
            response.headers.append(("Allow", served.joined(separator: ", ")))
        }
        return response
    }

    private func count(_ update: (inout HTTPServer.Statistics) -> Void) {
        shared.statistics.withLock { update(&$0) }
    }
}
