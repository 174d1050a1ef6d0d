/// A strict HTTP/1.1 request parser (RFC 9112), fed the bytes of one connection as they arrive.
/// It answers as early as it can: garbage is refused at the first byte that cannot be part of a
/// request line, a method the server does not serve as soon as the request line is complete, an
/// over-long target or head as soon as it passes the limit, and a body over the limit as soon as
/// its `Content-Length` is read — without waiting for the rest.
///
/// Refused (and why): bare LF or a control byte (400), obs-fold or whitespace before a colon
/// (400), a target that is not origin- or absolute-form (400), a version other than `HTTP/1.x`
/// (505, or 400 when it is no version at all), a known method the server does not serve (405),
/// an unknown method (501), a target over `maxTargetBytes` (414), a head over `maxHeadBytes` or
/// more than `maxHeaderFields` fields (431), HTTP/1.1 without exactly one Host (400). Bodies: a
/// server that takes none (`maxBodyBytes` 0, GET and HEAD only) refuses any (`Content-Length`
/// above 0, or `Transfer-Encoding`: 400); one that takes them reads exactly `Content-Length`
/// bytes (absent: none) on any method but GET and HEAD, refuses a length over `maxBodyBytes` (413), a
/// body on GET or HEAD (400),
/// a malformed or repeated `Content-Length` (400) and `Transfer-Encoding` (411: send a length).
///
/// Bytes after a complete request (the next one on a kept-alive connection) stay in ``leftover``.
struct RequestParser {
    enum Outcome: Equatable {
        case incomplete
        case request(HTTPRequest)
        case refuse(HTTPStatus, String)
    }

    struct Limits: Equatable {
        var maxHeadBytes = 8192
        var maxTargetBytes = 2048
        var maxHeaderFields = 64
        /// The methods served; a known one outside the set is 405.
        var methods: Set<HTTPMethod> = [.get, .head]
        /// The largest body accepted; 0 accepts none.
        var maxBodyBytes = 0
        /// A method token the server does not know is 405 like a known one it does not serve, not 501.
        var unknownMethodsNotAllowed = false
    }

    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"]

    let limits: Limits
    private(set) var buffer: [UInt8] = []
    /// Where the search for the end of the head resumes.
    private var scanned = 0
    private var requestLine: (method: HTTPMethod, target: String, version: String)?
    private var requestLineEnd = 0
    /// The parsed head of a request whose body is still arriving, and where the body starts.
    private var pending: (request: HTTPRequest, bodyStart: Int, length: Int)?
    /// Where the complete request ended; bytes after it belong to the next request.
    private var consumed = 0
    /// Set once per request whose head asked `Expect: 100-continue` and whose body is awaited: the
    /// server answers `100 Continue` (``takeContinue()``).
    private var continueWanted = false

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Adds bytes and says what is known now. Once it returns something other than `incomplete`,
    /// feeding more is pointless (the connection is answered and closed).
    mutating func feed(_ bytes: some Collection<UInt8>) -> Outcome {
        buffer.append(contentsOf: bytes)
        if pending != nil { return finishBody() }
        if requestLine == nil {
            switch scanRequestLine() {
            case .incomplete:
                if buffer.count > limits.maxHeadBytes { return .refuse(.headerFieldsTooLarge, "the request head is too large") }
                return .incomplete
            case .refuse(let status, let reason):
                return .refuse(status, reason)
            case .request:
                break
            }
        }
        // The head ends at the first CRLF CRLF (the request line's CRLF may be the first half).
        var index = max(scanned, requestLineEnd - 2)
        while index + 3 < buffer.count {
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                guard index + 4 <= limits.maxHeadBytes else {
                    return .refuse(.headerFieldsTooLarge, "the request head is larger than \(limits.maxHeadBytes) bytes")
                }
                return finishHead(fieldBytes: buffer[requestLineEnd..<(index + 2)], headEnd: index + 4)
            }
            index += 1
        }
        scanned = max(requestLineEnd, buffer.count - 3)
        if buffer.count > limits.maxHeadBytes {
            return .refuse(.headerFieldsTooLarge, "the request head is larger than \(limits.maxHeadBytes) bytes")
        }
        // Catch a bare LF or a control byte early rather than after the whole head has trickled in.
        if let problem = Self.checkFieldBytes(buffer[requestLineEnd...], complete: false) {
            return .refuse(.badRequest, problem)
        }
        return .incomplete
    }

    // MARK: - Request line

    /// Validates what there is of the request line; `.request` (with a placeholder) once it is
    /// complete and acceptable.
    private mutating func scanRequestLine() -> Outcome {
        var index = 0
        // method
        while index < buffer.count, Self.isTokenByte(buffer[index]) { index += 1 }
        guard index < buffer.count else {
            return index > 32 ? .refuse(.notImplemented, "no method is that long") : .incomplete
        }
        guard index > 0, buffer[index] == 32 else { return .refuse(.badRequest, "this is not an HTTP request line") }
        let method = String(decoding: buffer[0..<index], as: UTF8.self)
        index += 1
        // request-target
        let targetStart = index
        while index < buffer.count, (33...126).contains(buffer[index]) {
            index += 1
            if index - targetStart > limits.maxTargetBytes {
                return .refuse(.uriTooLong, "the request target is longer than \(limits.maxTargetBytes) bytes")
            }
        }
        guard index < buffer.count else { return .incomplete }
        guard index > targetStart, buffer[index] == 32 else {
            return .refuse(.badRequest, "the request target must be followed by one space and the version")
        }
        let target = String(decoding: buffer[targetStart..<index], as: UTF8.self)
        index += 1
        // HTTP-version CRLF: "HTTP/" DIGIT "." DIGIT
        let versionStart = index
        let expected = Array("HTTP/0.0\r\n".utf8)
        while index < buffer.count, index - versionStart < expected.count {
            let byte = buffer[index], want = expected[index - versionStart]
            let fits = want == UInt8(ascii: "0") ? (48...57).contains(byte) : byte == want
            guard fits else { return .refuse(.badRequest, "the request line does not end in HTTP/1.1") }
            index += 1
        }
        guard index - versionStart == expected.count else { return .incomplete }
        let version = String(decoding: buffer[versionStart..<(index - 2)], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .refuse(.httpVersionNotSupported, "only HTTP/1.1 and HTTP/1.0 are served, not \(version)")
        }
        guard let allowed = HTTPMethod(rawValue: method), limits.methods.contains(allowed) else {
            if Self.knownMethods.contains(method) || limits.unknownMethodsNotAllowed {
                return .refuse(.methodNotAllowed, limits.methods.contains(.post)
                    ? "\(method) is not served here" : "\(method) is not served here: this endpoint is read-only")
            }
            return .refuse(.notImplemented, "unknown method \(method.prefix(32))")
        }
        requestLine = (allowed, target, version)
        requestLineEnd = index
        return .request(HTTPRequest(method: allowed, path: "/"))
    }

    // MARK: - Header fields

    private mutating func finishHead(fieldBytes: ArraySlice<UInt8>, headEnd: Int) -> Outcome {
        guard let line = requestLine else { return .incomplete }
        if let problem = Self.checkFieldBytes(fieldBytes, complete: true) { return .refuse(.badRequest, problem) }
        var fields: [(name: String, value: String)] = []
        var start = fieldBytes.startIndex
        while start < fieldBytes.endIndex {
            guard let end = fieldBytes[start...].firstIndex(of: 13) else { break }  // CRLF-checked above
            let lineBytes = fieldBytes[start..<end]
            start = end + 2
            guard let first = lineBytes.first else { continue }
            if first == 32 || first == 9 {
                return .refuse(.badRequest, "folded header lines (obs-fold) are not accepted")
            }
            guard let colon = lineBytes.firstIndex(of: UInt8(ascii: ":")) else {
                return .refuse(.badRequest, "a header line without a colon")
            }
            let nameBytes = lineBytes[lineBytes.startIndex..<colon]
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(Self.isTokenByte) else {
                return .refuse(.badRequest, "an invalid header field name (no space before the colon)")
            }
            var value = lineBytes[(colon + 1)...]
            while let byte = value.first, byte == 32 || byte == 9 { value = value.dropFirst() }
            while let byte = value.last, byte == 32 || byte == 9 { value = value.dropLast() }
            fields.append((String(decoding: nameBytes, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            if fields.count > limits.maxHeaderFields {
                return .refuse(.headerFieldsTooLarge, "more than \(limits.maxHeaderFields) header fields")
            }
        }
        let named = { (name: String) in fields.filter { $0.name.lowercased() == name } }
        let hosts = named("host")
        if line.version == "HTTP/1.1" && hosts.count != 1 {
            return .refuse(.badRequest, hosts.isEmpty ? "an HTTP/1.1 request needs a Host header"
                                                      : "more than one Host header")
        }
        let acceptsBodies = limits.maxBodyBytes > 0
        if !named("transfer-encoding").isEmpty {
            return acceptsBodies
                ? .refuse(.lengthRequired, "Transfer-Encoding is not accepted; send the body with a Content-Length")
                : .refuse(.badRequest, "a request body (Transfer-Encoding) is not accepted")
        }
        let lengths = named("content-length")
        if lengths.count > 1 { return .refuse(.badRequest, "more than one Content-Length") }
        var length = 0
        if let field = lengths.first {
            guard !field.value.isEmpty, field.value.utf8.allSatisfy({ (48...57).contains($0) }) else {
                return .refuse(.badRequest, "an invalid Content-Length")
            }
            let digits = field.value.drop { $0 == "0" }
            guard digits.count <= 18, let value = Int(digits.isEmpty ? "0" : String(digits)) else {
                return .refuse(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes")
            }
            length = value
        }
        if length > 0 {
            guard acceptsBodies else {
                return .refuse(.badRequest, "a request body is not accepted (GET and HEAD only)")
            }
            guard line.method != .get && line.method != .head else {
                return .refuse(.badRequest, "a \(line.method.rawValue) request has no body")
            }
            guard length <= limits.maxBodyBytes else {
                return .refuse(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes")
            }
        }
        guard let (path, query) = Self.splitTarget(line.target) else {
            return .refuse(.badRequest, "the request target must be a path like /metrics")
        }
        let request = HTTPRequest(method: line.method, path: path, query: query, version: line.version, headers: fields)
        pending = (request, headEnd, length)
        continueWanted = length > 0 && named("expect").contains { $0.value.lowercased() == "100-continue" }
            && buffer.count < headEnd + length
        return finishBody()
    }

    /// The request once its body has arrived whole.
    private mutating func finishBody() -> Outcome {
        guard var (request, start, length) = pending else { return .incomplete }
        guard buffer.count >= start + length else { return .incomplete }
        request.body = Array(buffer[start..<(start + length)])
        consumed = start + length
        pending = nil
        continueWanted = false
        return .request(request)
    }

    /// Whether a head has arrived whose body is awaited and which has not yet been sent a body
    /// (the state a request is in while its `Content-Length` bytes arrive).
    var awaitsBody: Bool { pending != nil }

    /// True once for a request that asked `Expect: 100-continue` and whose body has not arrived:
    /// the server then sends `100 Continue`.
    mutating func takeContinue() -> Bool {
        defer { continueWanted = false }
        return continueWanted
    }

    /// The bytes after the complete request: the start of the next one on the connection.
    var leftover: ArraySlice<UInt8> { buffer[min(consumed, buffer.count)...] }

    /// Checks the raw field lines: every line ends in CRLF (no bare CR or LF), and no control byte
    /// other than HTAB appears. `complete` is false while the head is still arriving (a final CR
    /// may be waiting for its LF).
    static func checkFieldBytes(_ bytes: ArraySlice<UInt8>, complete: Bool) -> String? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 13 {
                let next = index + 1
                if next == bytes.endIndex { return complete ? "a CR without LF" : nil }
                if bytes[next] != 10 { return "a CR without LF" }
                index += 2
                continue
            }
            if byte == 10 { return "a bare LF (lines must end in CRLF)" }
            if (byte < 32 && byte != 9) || byte == 127 { return "a control character in a header" }
            index += 1
        }
        return nil
    }

    /// Origin-form `/path?query`, or absolute-form `http://host/path?query` (reduced to its path).
    static func splitTarget(_ target: String) -> (path: String, query: String?)? {
        var rest = Substring(target)
        if rest.lowercased().hasPrefix("http://") || rest.lowercased().hasPrefix("https://") {
            rest = rest[rest.index(rest.startIndex, offsetBy: rest.lowercased().hasPrefix("http://") ? 7 : 8)...]
            guard let slash = rest.firstIndex(of: "/") else { return ("/", nil) }
            guard slash > rest.startIndex else { return nil }
            rest = rest[slash...]
        }
        guard rest.hasPrefix("/"), !rest.contains("#") else { return nil }
        guard let mark = rest.firstIndex(of: "?") else { return (String(rest), nil) }
        return (String(rest[..<mark]), String(rest[rest.index(after: mark)...]))
    }

    /// tchar: `!#$%&'*+-.^_`|~`, digits and letters.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case 33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126: true
        default: false
        }
    }
}
