import Testing

@testable import SpliceHTTP

@Suite("HTTP request parser")
struct RequestParserTests {
    private func parse(_ text: String, limits: RequestParser.Limits = .init()) -> RequestParser.Outcome {
        var parser = RequestParser(limits: limits)
        return parser.feed(Array(text.utf8))
    }

    private func status(_ text: String, limits: RequestParser.Limits = .init()) -> Int? {
        if case .refuse(let status, _) = parse(text, limits: limits) { return status.code }
        return nil
    }

    @Test("a GET with a path, a query and headers")
    func get() throws {
        guard case .request(let request) = parse("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9450\r\nAccept: */*\r\n\r\n")
        else { Issue.record("not a request"); return }
        #expect(request.method == .get)
        #expect(request.path == "/metrics")
        #expect(request.query == "x=1")
        #expect(request.version == "HTTP/1.1")
        #expect(request.header("host") == "localhost:9450")
        #expect(request.header("ACCEPT") == "*/*")
    }

    @Test("HEAD, HTTP/1.0 without Host, absolute-form targets, Content-Length 0 and surrounding whitespace")
    func accepted() {
        guard case .request(let head) = parse("HEAD / HTTP/1.0\r\n\r\n") else { Issue.record("HEAD"); return }
        #expect(head.method == .head && head.path == "/")
        guard case .request(let absolute) = parse("GET http://h:1/readyz HTTP/1.1\r\nHost: h:1\r\n\r\n") else {
            Issue.record("absolute-form")
            return
        }
        #expect(absolute.path == "/readyz")
        guard case .request(let empty) = parse("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nX:  spaced \t\r\n\r\n")
        else { Issue.record("content-length 0"); return }
        #expect(empty.header("x") == "spaced")
    }

    @Test("refused requests, with the status each gets", arguments: [
        ("GET / HTTP/1.1\r\n\r\n", 400),                                  // no Host
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),           // two Hosts
        ("GET / HTTP/1.1\nHost: x\n\n", 400),                             // bare LF after the version
        ("GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", 400),                // bare LF in the fields
        ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),                      // two spaces
        (" GET / HTTP/1.1\r\n", 400),                                      // leading space
        ("\u{16}\u{03}\u{01}\u{02}\u{00}", 400),                           // a TLS ClientHello
        ("GET / HTTX/1.1\r\n", 400),
        ("GET / HTTP/2.0\r\n", 505),
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),            // obs-fold
        ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),                      // space before the colon
        ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{0}b\r\n\r\n", 400),         // NUL in a value
        ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET /a#fragment HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET relative HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("POST /metrics HTTP/1.1\r\n", 405),                               // refused before its fields
        ("DELETE / HTTP/1.1\r\n", 405),
        ("OPTIONS * HTTP/1.1\r\n", 405),
        ("get / HTTP/1.1\r\n", 501),                                       // methods are case-sensitive
        ("BREW /pot HTTP/1.1\r\n", 501),
    ])
    func refused(request: String, expected: Int) {
        #expect(status(request) == expected, "\(request.debugDescription)")
    }

    @Test("a target over the limit is 414 as soon as it passes it; a head over the limit 431")
    func limits() {
        let limits = RequestParser.Limits(maxHeadBytes: 1024, maxTargetBytes: 100, maxHeaderFields: 4)
        #expect(status("GET /" + String(repeating: "a", count: 100), limits: limits) == 414)
        #expect(status("GET /ok HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "b", count: 1100), limits: limits) == 431)
        let fields = (0..<5).map { "X\($0): y\r\n" }.joined()
        #expect(status("GET / HTTP/1.1\r\nHost: x\r\n" + fields + "\r\n", limits: limits) == 431)
        #expect(status(String(repeating: "G", count: 40)) == 501)  // no method is that long
    }

    @Test("fed a byte at a time it answers the same, and the first bad byte is refused at once")
    func incremental() {
        for text in ["GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nX: a\u{7}\r\n\r\n",
                     "POST / HTTP/1.1\r\n"] {
            var parser = RequestParser()
            var outcome = RequestParser.Outcome.incomplete
            for byte in text.utf8 {
                outcome = parser.feed([byte])
                if outcome != .incomplete { break }
            }
            #expect(outcome == parse(text), "\(text.debugDescription)")
        }
        var garbage = RequestParser()
        #expect(garbage.feed([0x16]) == .refuse(.badRequest, "this is not an HTTP request line"))
        var partial = RequestParser()
        #expect(partial.feed(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n".utf8)) == .incomplete)
        var control = RequestParser()
        if case .refuse(let status, _) = control.feed(Array("GET / HTTP/1.1\r\nX: \u{1}".utf8)) {
            #expect(status == .badRequest)
        } else {
            Issue.record("a control byte in an unfinished field was not refused at once")
        }
    }
}

@Suite("HTTP request parser, with bodies")
struct RequestBodyParserTests {
    /// What the HTTP API takes: GET, HEAD and POST, bodies up to 1 KiB here.
    static let api = RequestParser.Limits(methods: [.get, .head, .post, .put], maxBodyBytes: 1024)

    private func parse(_ text: String) -> RequestParser.Outcome {
        var parser = RequestParser(limits: Self.api)
        return parser.feed(Array(text.utf8))
    }

    @Test("a POST body is exactly Content-Length bytes; what follows is the next request")
    func body() {
        var parser = RequestParser(limits: Self.api)
        let text = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}GET / HTTP/1.1\r\n"
        guard case .request(let request) = parser.feed(Array(text.utf8)) else { Issue.record("no request"); return }
        #expect(request.method == .post && request.path == "/v1/jobs")
        #expect(String(decoding: request.body, as: UTF8.self) == "{\"a\":1}")
        #expect(String(decoding: parser.leftover, as: UTF8.self) == "GET / HTTP/1.1\r\n")
        // A POST without a length has no body (RFC 9112 6.3).
        guard case .request(let empty) = parse("POST /v1/jobs/x/cancel HTTP/1.1\r\nHost: x\r\n\r\n") else {
            Issue.record("no request")
            return
        }
        #expect(empty.body.isEmpty)
    }

    @Test("a body fed a byte at a time arrives whole; 100-continue is asked for once")
    func trickled() {
        var parser = RequestParser(limits: Self.api)
        let head = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
        #expect(parser.feed(Array(head.utf8)) == .incomplete)
        #expect(parser.awaitsBody)
        let first = parser.takeContinue(), second = parser.takeContinue()
        #expect(first && !second)
        #expect(parser.feed(Array("a".utf8)) == .incomplete)
        #expect(parser.feed(Array("b".utf8)) == .incomplete)
        guard case .request(let request) = parser.feed(Array("c".utf8)) else { Issue.record("no request"); return }
        #expect(request.body == Array("abc".utf8))
    }

    @Test("bodies refused, with the status each gets", arguments: [
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n", 413),      // over the limit, unread
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab", 400),        // GET carries none
        ("TRACE / HTTP/1.1\r\n", 405),
    ])
    func refused(request: String, expected: Int) {
        guard case .refuse(let status, _) = parse(request) else {
            Issue.record("\(request.debugDescription) was not refused")
            return
        }
        #expect(status.code == expected, "\(request.debugDescription)")
    }

    @Test("an unknown method is 501, or 405 like a known one when the server says so")
    func unknownMethod() {
        var plain = RequestParser(limits: Self.api)
        guard case .refuse(let status, _) = plain.feed(Array("QUERY / HTTP/1.1\r\n".utf8)) else {
            Issue.record("QUERY was not refused")
            return
        }
        #expect(status.code == 501)
        var limits = Self.api
        limits.unknownMethodsNotAllowed = true
        var api = RequestParser(limits: limits)
        guard case .refuse(let notAllowed, _) = api.feed(Array("QUERY / HTTP/1.1\r\n".utf8)) else {
            Issue.record("QUERY was not refused")
            return
        }
        #expect(notAllowed.code == 405)
    }

    @Test("Connection: close and HTTP/1.0 end the connection; HTTP/1.1 keeps it")
    func persistence() {
        #expect(HTTPRequest(method: .get, path: "/", version: "HTTP/1.1").wantsClose == false)
        #expect(HTTPRequest(method: .get, path: "/", headers: [("Connection", "Close")]).wantsClose)
        #expect(HTTPRequest(method: .get, path: "/", version: "HTTP/1.0").wantsClose)
        #expect(HTTPRequest(method: .get, path: "/", version: "HTTP/1.0", headers: [("connection", "keep-alive")])
            .wantsClose == false)
    }
}

@Suite("HTTP addresses")
struct HTTPAddressTests {
    @Test("IP:PORT, [IPv6]:PORT and localhost; names and missing ports are refused")
    func parsing() {
        #expect(HTTPAddress(parsing: "127.0.0.1:9450")?.description == "127.0.0.1:9450")
        #expect(HTTPAddress(parsing: "localhost:9450")?.description == "127.0.0.1:9450")
        #expect(HTTPAddress(parsing: "[::1]:9451")?.description == "[::1]:9451")
        #expect(HTTPAddress(parsing: "0.0.0.0:0")?.port == 0)
        for bad in ["", "9450", ":9450", "example.com:80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "::1:9450",
                    "[::1]9450", "127.0.0.1:http", "1.2.3.4:+80"] {
            #expect(HTTPAddress(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test("loopback is 127/8 and ::1 only")
    func loopback() {
        #expect(HTTPAddress(parsing: "127.0.0.1:1")?.isLoopback == true)
        #expect(HTTPAddress(parsing: "127.1.2.3:1")?.isLoopback == true)
        #expect(HTTPAddress(parsing: "[::1]:1")?.isLoopback == true)
        #expect(HTTPAddress(parsing: "0.0.0.0:1")?.isLoopback == false)
        #expect(HTTPAddress(parsing: "[::]:1")?.isLoopback == false)
        #expect(HTTPAddress(parsing: "10.0.0.5:1")?.isLoopback == false)
        #expect(HTTPAddress(parsing: "0.0.0.0:9450")?.url == "http://127.0.0.1:9450")
    }
}
