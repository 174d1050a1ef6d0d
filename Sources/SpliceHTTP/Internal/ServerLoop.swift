#if canImport(Glibc)
import Glibc
#endif
import SpliceConcurrency
import Synchronization

/// The server's thread: one `poll(2)` loop over the listening socket, a wake-up pipe and every
/// connection, all non-blocking. Connections and their parsers are confined to this thread
/// (hence `@unchecked Sendable`); handlers run as tasks and hand their responses back through
/// `Shared`, waking the loop. A connection lives through
///
///     reading (head deadline) → handling (handler deadline) → writing (write deadline)
///         → lingering (a short drain after shutdown(SHUT_WR), so the client reads the answer)
///
/// and is closed after one answer (`Connection: close`). A deadline that passes ends it with
/// 408 (head), 503 (handler), or a plain close.
final class ServerLoop: @unchecked Sendable {
    /// What handler tasks and the public side share with the loop.
    final class Shared: Sendable {
        let completions = Mutex<[(UInt64, HTTPResponse)]>([])
        let stopping = Atomic<Bool>(false)
        let statistics = Mutex(HTTPServer.Statistics())
        let wake: WakePipe
        let finished = Latch()

        init(wake: WakePipe) {
            self.wake = wake
        }
    }

    private enum Phase {
        case reading(RequestParser)
        case handling(head: Bool)
        case writing([UInt8], sent: Int)
        case lingering(discarded: Int)
    }

    private struct Connection {
        let fd: Int32
        var phase: Phase
        var deadline: ContinuousClock.Instant
    }

    let shared: Shared
    private let listenFD: Int32
    private let limits: HTTPServer.Limits
    private let handler: HTTPServer.Handler
    private var connections: [UInt64: Connection] = [:]
    private var nextID: UInt64 = 0
    private var acceptPausedUntil = ContinuousClock.now
    private static let lingerBytes = 64 * 1024

    init(listenFD: Int32, limits: HTTPServer.Limits, handler: @escaping HTTPServer.Handler, shared: Shared) {
        self.listenFD = listenFD
        self.limits = limits
        self.handler = handler
        self.shared = shared
    }

    // MARK: - The loop

    func run() {
        defer {
            for connection in connections.values { close(connection.fd) }
            connections = [:]
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
                    let busy = HTTPResponse.refusal(.serviceUnavailable, "too many connections; try again")
                    _ = ListeningSocket.send(fd, busy.serialized(head: false, date: HTTPDate.now())[...])
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
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(connection.fd, &buffer, buffer.count)
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                finish(id)  // the client left before finishing its request
                return
            }
            guard count > 0 else { return }
            let outcome = parser.feed(buffer[0..<count])
            connection.phase = .reading(parser)
            connections[id] = connection
            switch outcome {
            case .incomplete:
                break
            case .refuse(let status, let reason):
                answer(id, HTTPResponse.refusal(status, reason), head: false)
            case .request(let request):
                dispatch(id, request)
            }
        case .handling:
            if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { finish(id) }
        case .writing:
            if revents & Int16(POLLERR | POLLNVAL) != 0 {
                finish(id)
            } else {
                write(id)
            }
        case .lingering(let discarded):
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(connection.fd, &buffer, buffer.count)
            if count > 0 && discarded + count < Self.lingerBytes {
                connection.phase = .lingering(discarded: discarded + count)
                connections[id] = connection
            } else if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) || count > 0 {
                finish(id)
            }
        }
    }

    private func dispatch(_ id: UInt64, _ request: HTTPRequest) {
        guard var connection = connections[id] else { return }
        connection.phase = .handling(head: request.method == .head)
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
            // A connection that timed out or left meanwhile is gone: the late answer is dropped.
            guard let connection = connections[id], case .handling(let head) = connection.phase else { continue }
            answer(id, response, head: head)
        }
    }

    private func answer(_ id: UInt64, _ response: HTTPResponse, head: Bool) {
        guard var connection = connections[id] else { return }
        count { $0.responses[response.status.code, default: 0] += 1 }
        connection.phase = .writing(response.serialized(head: head, date: HTTPDate.now()), sent: 0)
        connection.deadline = .now + limits.writeDeadline
        connections[id] = connection
        write(id)
    }

    private func write(_ id: UInt64) {
        guard var connection = connections[id], case .writing(let bytes, let sent) = connection.phase else { return }
        guard let written = ListeningSocket.send(connection.fd, bytes[sent...]) else {
            finish(id)
            return
        }
        if sent + written < bytes.count {
            connection.phase = .writing(bytes, sent: sent + written)
            connections[id] = connection
            return
        }
        // All sent: half-close and read what the client still sends for a moment, so closing does
        // not reset the connection before it has read the answer.
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.phase = .lingering(discarded: 0)
        connection.deadline = .now + limits.lingerDeadline
        connections[id] = connection
    }

    private func expire(now: ContinuousClock.Instant) {
        for (id, connection) in connections where connection.deadline <= now {
            switch connection.phase {
            case .reading:
                // Too slow to send a head (slowloris): one try at a 408, then gone.
                count { $0.headTimeouts += 1 }
                let late = HTTPResponse.refusal(.requestTimeout, "the request head did not arrive in time")
                _ = ListeningSocket.send(connection.fd, late.serialized(head: false, date: HTTPDate.now())[...])
                finish(id)
            case .handling:
                count { $0.handlerTimeouts += 1 }
                answer(id, .refusal(.serviceUnavailable, "the answer took too long; try again"), head: false)
            case .writing, .lingering:
                finish(id)
            }
        }
    }

    private func finish(_ id: UInt64) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        close(connection.fd)
    }

    private func count(_ update: (inout HTTPServer.Statistics) -> Void) {
        shared.statistics.withLock { update(&$0) }
    }
}
