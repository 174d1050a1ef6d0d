import Foundation
import SpliceConcurrency
import SpliceHTTP
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The server as the HTTP API runs it: POST bodies, kept-alive connections, streamed responses,
/// and its refusals worded by the caller — against well-behaved, oversized, slow and garbage
/// clients.
@Suite("HTTP server with bodies and streams")
struct HTTPServerBodyTests {
    static let address = HTTPAddress(parsing: "127.0.0.1:0")!

    /// `/echo` answers the body's length and bytes; `/stream` hands its stream to `streams`.
    private func start(streams: Streams = Streams(), _ configure: (inout HTTPServer.Limits) -> Void = { _ in }) throws
        -> HTTPServer
    {
        var limits = HTTPServer.Limits()
        limits.methods = [.get, .head, .post]
        limits.maxBodyBytes = 4096
        limits.maxRequestsPerConnection = 100
        configure(&limits)
        return try HTTPServer.start(on: Self.address, limits: limits, refusal: { status, reason in
            .body("{\"status\":\(status.code),\"detail\":\"\(reason)\"}", contentType: "application/problem+json",
                  status: status)
        }) { request in
            switch request.path {
            case "/echo":
                return .text("\(request.method.rawValue) \(request.body.count) " + String(decoding: request.body, as: UTF8.self))
            case "/stream":
                let stream = HTTPResponseStream()
                streams.opened(stream)
                return HTTPResponse(status: .ok, headers: [("Content-Type", "text/event-stream")], stream: stream)
            default:
                return .text("no\n", status: .notFound)
            }
        }
    }

    /// The streams the server handed out, in order.
    final class Streams: Sendable {
        private let list = Mutex<[HTTPResponseStream]>([])
        func opened(_ stream: HTTPResponseStream) { list.withLock { $0.append(stream) } }
        var all: [HTTPResponseStream] { list.withLock { $0 } }
    }

    @Test("a POST body reaches the handler; two pipelined requests on one connection get two answers")
    func keptAlive() async throws {
        let server = try start()
        let text = await RawConnection.run { () -> String in
            guard let connection = RawConnection(server.address) else { return "" }
            connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                + "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = connection.readToEnd()
            return connection.text
        }
        let answers = text.components(separatedBy: "HTTP/1.1 200 OK").count - 1
        #expect(answers == 2, "\(text)")
        #expect(text.contains("POST 5 hello"))
        #expect(text.contains("GET 0 "))
        // The first answer keeps the connection; the last one says it closes it.
        #expect(text.components(separatedBy: "Connection: close").count - 1 == 1, "\(text)")
        #expect(server.statistics.accepted == 1)
        // A second request on a kept connection, sent after the first answer arrived.
        let second = await RawConnection.run { () -> (String, String) in
            guard let connection = RawConnection(server.address) else { return ("", "") }
            connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab")
            connection.read { $0.contains("POST 2 ab") }
            let first = connection.text
            connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\ncd")
            _ = connection.readToEnd()
            return (first, connection.text)
        }
        #expect(second.0.contains("POST 2 ab"))
        #expect(second.1.contains("POST 2 cd"))
        await server.close()
    }

    @Test("a body over the limit is 413 at once, before it is sent, worded by the caller; then the server serves")
    func tooLarge() async throws {
        let server = try start()
        let started = ContinuousClock.now
        let exchange = await RawClient.exchange(
            server.address, [Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n".utf8)])
        #expect(exchange.statusCode == 413, "\(exchange.response)")
        #expect(exchange.header("Content-Type") == "application/problem+json")
        #expect(exchange.body.contains("\"status\":413"))
        #expect(ContinuousClock.now - started < .seconds(4))  // not at a deadline
        let chunked = await RawClient.exchange(
            server.address, [Array("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)])
        #expect(chunked.statusCode == 411)
        let put = await RawClient.exchange(server.address, [Array("PUT /echo HTTP/1.1\r\nHost: x\r\n\r\n".utf8)])
        #expect(put.statusCode == 405)
        #expect(put.header("Allow") == "GET, HEAD, POST")
        let options = await RawClient.exchange(server.address, [Array("OPTIONS /echo HTTP/1.1\r\nHost: x\r\n\r\n".utf8)])
        #expect(options.statusCode == 405)
        #expect(await RawClient.get(server.address, "/echo").statusCode == 200)
        await server.close()
    }

    @Test("Expect: 100-continue is answered before the body is sent")
    func expectContinue() async throws {
        let server = try start()
        let (interim, final) = await RawConnection.run { () -> (Bool, String) in
            guard let connection = RawConnection(server.address) else { return (false, "") }
            connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n")
            let interim = connection.read(until: { $0.contains("HTTP/1.1 100 Continue\r\n\r\n") }, timeout: .seconds(10))
            connection.send("body")
            _ = connection.readToEnd()
            return (interim, connection.text)
        }
        #expect(interim)
        #expect(final.contains("POST 4 body"), "\(final)")
        await server.close()
    }

    @Test("a body trickled a byte at a time (slowloris on POST) is cut off at the body deadline; others are served")
    func slowBody() async throws {
        let server = try start { $0.bodyDeadline = .seconds(1) }
        let head = Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n".utf8)
        async let slow = RawClient.exchange(
            server.address, [head] + Array(repeating: Array("a".utf8), count: 60), gap: .milliseconds(100))
        try await Task.sleep(for: .milliseconds(200))
        for _ in 0..<5 {
            let exchange = await RawClient.exchange(
                server.address, [Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz".utf8)])
            #expect(exchange.statusCode == 200)
            #expect(exchange.elapsed < .seconds(10))
        }
        let cut = await slow
        #expect(cut.statusCode == 408, "\(cut.response)")
        #expect(cut.body.contains("body did not arrive"))
        #expect(cut.elapsed < .seconds(5))  // the deadline (1 s), not the trickle (~6 s)
        #expect(server.statistics.headTimeouts == 1)
        await server.close()
    }

    @Test("garbage heads and bodies, short bodies and early closes: answered or closed, never hung; the server goes on")
    func garbage() async throws {
        let server = try start { $0.headDeadline = .seconds(2); $0.bodyDeadline = .seconds(2) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let junk = (0..<Int.random(in: 1...600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Random bytes as a body: the server carries them to the handler untouched.
            let post = Array("POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(junk.count)\r\n\r\n".utf8)
            let answered = await RawClient.exchange(server.address, [post + junk])
            #expect(answered.statusCode == 200)
            // Compared as bytes: random bytes after the space may begin with a combining mark,
            // which joins the space into one Character and defeats a String prefix.
            #expect(answered.body.utf8.starts(with: "POST \(junk.count) ".utf8), "\(answered.body.prefix(20))")
            // Random bytes after a POST line: refused or cut off at a deadline.
            let refused = await RawClient.exchange(server.address, [Array("POST /echo HTTP/1.1\r\n".utf8) + junk])
            #expect(refused.elapsed < .seconds(20))
        }
        // A body shorter than its length, then the client leaves: nothing reaches the handler.
        _ = await RawClient.exchange(server.address, [Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nab".utf8)],
                                     timeout: .milliseconds(300))
        #expect(await RawClient.get(server.address, "/echo").statusCode == 200)
        await server.close()
    }

    @Test("a streamed response arrives as it is written and ends the connection when finished")
    func stream() async throws {
        let streams = Streams()
        let server = try start(streams: streams)
        async let received = RawConnection.run { () -> String in
            guard let connection = RawConnection(server.address) else { return "" }
            connection.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = connection.readToEnd(timeout: .seconds(30))
            return connection.text
        }
        #expect(await eventually { streams.all.count == 1 })
        let stream = try #require(streams.all.first)
        for index in 0..<3 {
            #expect(stream.write(Array("data: \(index)\n\n".utf8)))
            try await Task.sleep(for: .milliseconds(50))
        }
        stream.finish()
        let text = await received
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(text.contains("Content-Type: text/event-stream"))
        #expect(!text.contains("Content-Length"))
        #expect(text.hasSuffix("data: 0\n\ndata: 1\n\ndata: 2\n\n"), "\(text)")
        #expect(stream.isClosed)
        #expect(!stream.write([1]))
        await server.close()
    }

    @Test("a stream's client leaving runs its close actions; one that stops reading is dropped, not buffered")
    func streamClients() async throws {
        let streams = Streams()
        let server = try start(streams: streams) { $0.maxStreamBufferBytes = 256 * 1024 }
        let closedFlag = Latch()
        let leaving = await RawConnection.run { () -> RawConnection? in
            guard let connection = RawConnection(server.address) else { return nil }
            connection.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            connection.read { $0.contains("\r\n\r\n") }
            return connection
        }
        #expect(leaving != nil)
        #expect(await eventually { streams.all.count == 1 })
        streams.all[0].onClose { closedFlag.open() }
        leaving?.hangUp()
        #expect(await eventually(within: .seconds(10)) { closedFlag.isOpen })

        // A client that never reads (a small receive buffer): writes are refused once it is dropped.
        let stuck = await RawConnection.run { () -> RawConnection? in
            guard let connection = RawConnection(server.address, receiveBuffer: 4096) else { return nil }
            connection.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            return connection
        }
        #expect(await eventually { streams.all.count == 2 })
        let stream = streams.all[1]
        var written = 0
        let chunk = [UInt8](repeating: 65, count: 16 * 1024)
        while stream.write(chunk), written < 64 << 20 {
            written += chunk.count
            if written % (1 << 20) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(written < 64 << 20, "the stream took \(written) bytes for a client that reads nothing")
        #expect(await eventually { server.statistics.streamsOverflowed == 1 })
        #expect(stuck != nil)
        #expect(await RawClient.get(server.address, "/echo").statusCode == 200)
        await server.close()
    }
}
