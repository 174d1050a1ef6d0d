import Foundation
import SpliceConcurrency
import SpliceHTTP
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The server on loopback, against well-behaved, oversized, slow and garbage clients. Waits are
/// generous (the test machines are small and shared); the deadlines under test are short.
@Suite("HTTP server")
struct HTTPServerTests {
    static let address = HTTPAddress(parsing: "127.0.0.1:0")!

    /// A server answering `/ok` with "fine", `/slow` once `release` opens, anything else 404.
    private func start(release: Latch = Latch(), _ configure: (inout HTTPServer.Limits) -> Void = { _ in }) throws
        -> HTTPServer
    {
        var limits = HTTPServer.Limits()
        configure(&limits)
        return try HTTPServer.start(on: Self.address, limits: limits) { request in
            switch request.path {
            case "/ok": return .text("fine\n")
            case "/slow":
                await release.wait()
                return .text("late\n")
            default: return .text("no\n", status: .notFound)
            }
        }
    }

    @Test("GET answers with the body, Content-Length, Date and Connection: close; HEAD the same head")
    func getAndHead() async throws {
        let server = try start()
        let get = await RawClient.get(server.address, "/ok")
        #expect(get.statusCode == 200)
        #expect(get.body == "fine\n")
        #expect(get.header("Content-Length") == "5")
        #expect(get.header("Connection") == "close")
        #expect(get.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(get.header("X-Content-Type-Options") == "nosniff")
        #expect(get.header("Date")?.hasSuffix(" GMT") == true)
        let head = await RawClient.get(server.address, "/ok", method: "HEAD")
        #expect(head.statusCode == 200)
        #expect(head.header("Content-Length") == "5")
        #expect(head.body.isEmpty)
        #expect(await RawClient.get(server.address, "/nothing").statusCode == 404)
        #expect(server.statistics.responses[200] == 2)
        await server.close()
    }

    @Test("bad requests are answered 400/405/414/431/501/505 and closed; the server goes on serving")
    func refusals() async throws {
        let server = try start()
        let cases: [(String, Int)] = [
            ("\u{16}\u{03}\u{01}\u{00}\u{a5}\u{01}\u{00}", 400),
            ("GET /ok HTTP/1.1\r\n\r\n", 400),
            ("POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 405),
            ("GET /" + String(repeating: "x", count: 3000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("GET /ok HTTP/1.1\r\nHost: x\r\nCookie: " + String(repeating: "c", count: 9000) + "\r\n\r\n", 431),
            ("BREW /ok HTTP/1.1\r\n\r\n", 501),
            ("GET /ok HTTP/3.0\r\nHost: x\r\n\r\n", 505),
        ]
        for (request, expected) in cases {
            let exchange = await RawClient.exchange(server.address, [Array(request.utf8)])
            #expect(exchange.statusCode == expected, "\(request.prefix(40).debugDescription): \(exchange.response.prefix(80))")
            if expected == 405 { #expect(exchange.header("Allow") == "GET, HEAD") }
            #expect(await RawClient.get(server.address, "/ok").statusCode == 200)
        }
        // Random bytes, many times: every connection gets an answer or a close, none hangs.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let junk = (0..<Int.random(in: 1...600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let exchange = await RawClient.exchange(server.address, [junk])
            #expect(exchange.elapsed < .seconds(20))  // at worst the 5 s head deadline
        }
        #expect(await RawClient.get(server.address, "/ok").body == "fine\n")
        await server.close()
    }

    @Test("a head trickled a byte at a time (slowloris) is cut off at the deadline while others are served")
    func slowloris() async throws {
        let server = try start { $0.headDeadline = .seconds(1) }
        let trickle = Array("GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n".utf8)
        async let slow = RawClient.exchange(server.address, trickle.map { [$0] }, gap: .milliseconds(100))
        // Meanwhile, normal clients get their answers at once.
        try await Task.sleep(for: .milliseconds(200))
        for _ in 0..<5 {
            let exchange = await RawClient.get(server.address, "/ok")
            #expect(exchange.statusCode == 200)
            #expect(exchange.elapsed < .seconds(10))
        }
        let cut = await slow
        #expect(cut.statusCode == 408 || cut.response.isEmpty, "\(cut.response)")
        #expect(cut.elapsed < .seconds(6))  // the deadline (1 s), not the trickle (~7 s)
        #expect(server.statistics.headTimeouts == 1)
        await server.close()
    }

    @Test("over the connection cap a client is answered 503 at once (not at a deadline); closing frees the cap")
    func connectionCap() async throws {
        let server = try start {
            $0.maxConnections = 2
            $0.headDeadline = .seconds(60)
        }
        let idle = [RawClient.idle(server.address), RawClient.idle(server.address)]
        #expect(idle.allSatisfy { $0 >= 0 })
        #expect(await eventually { server.statistics.accepted == 2 })
        let refused = await RawClient.get(server.address, "/ok")
        #expect(refused.statusCode == 503, "\(refused.response)")
        #expect(refused.elapsed < .seconds(30))  // long before the idle ones' 60 s deadline
        for fd in idle { close(fd) }
        #expect(await eventually { await RawClient.get(server.address, "/ok").statusCode == 200 })
        #expect(server.statistics.refusedOverCapacity >= 1)
        await server.close()
    }

    /// The default 10 s deadline: handlers run as tasks, and in the whole suite (two cores, every
    /// test at once) the quick one may wait seconds for a thread of the cooperative pool.
    @Test("a handler that takes too long is answered 503; the server is not held up meanwhile")
    func handlerDeadline() async throws {
        let release = Latch()
        let server = try start(release: release)
        async let slow = RawClient.get(server.address, "/slow")
        try await Task.sleep(for: .milliseconds(50))
        #expect(await RawClient.get(server.address, "/ok").statusCode == 200)
        let late = await slow
        #expect(late.statusCode == 503, "\(late.response)")
        #expect(late.elapsed >= .seconds(10) && late.elapsed < .seconds(40))
        #expect(server.statistics.handlerTimeouts == 1)
        release.open()
        await server.close()
    }

    @Test("many slow and garbage clients at once do not stop a normal one")
    func mixed() async throws {
        let server = try start {
            $0.headDeadline = .seconds(2)
            $0.maxConnections = 48
        }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let bytes = index % 2 == 0 ? Array("GET /ok HTTP/1.1\r\nHo".utf8) : [0, 1, 2, 255, 13, 10]
                    _ = await RawClient.exchange(server.address, bytes.map { [$0] }, gap: .milliseconds(150))
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(300))
                for _ in 0..<5 {
                    let exchange = await RawClient.get(server.address, "/ok")
                    #expect(exchange.statusCode == 200)
                    #expect(exchange.elapsed < .seconds(15))
                }
            }
        }
        await server.close()
    }

    @Test("close() stops listening; a second start on the same port works; a port in use is refused")
    func lifecycle() async throws {
        let server = try start()
        let address = server.address
        #expect(address.port != 0)
        #expect(throws: HTTPServerError.self) { _ = try HTTPServer.start(on: address) { _ in .text("") } }
        await server.close()
        await server.close()
        #expect(RawClient.connectTo(address) == -1)
        let again = try HTTPServer.start(on: address) { _ in .text("again\n") }
        #expect(await RawClient.get(again.address, "/").body == "again\n")
        await again.close()
    }
}
