/// A strict HTTP/1.1 request-head parser (RFC 9112), fed the bytes of one connection as they
/// arrive. It answers as early as it can: garbage is refused at the first byte that cannot be part
/// of a request line, a method other than GET/HEAD as soon as the request line is complete, and
/// an over-long target or head as soon as it passes the limit — without waiting for the rest.
///
/// Refused (and why): bare LF or a control byte (400), obs-fold or whitespace before a colon
/// (400), a target that is not origin- or absolute-form (400), a version other than `HTTP/1.x`
/// (505, or 400 when it is no version at all), a known method other than GET/HEAD (405), an
/// unknown method (501), a target over `maxTargetBytes` (414), a head over `maxHeadBytes` or more
/// than `maxHeaderFields` fields (431), HTTP/1.1 without exactly one Host (400), any body
/// (`Content-Length` above 0, or `Transfer-Encoding`: 400).
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
    }

    static let knownMethods: Set<String> = ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"]

    let limits: Limits
    private(set) var buffer: [UInt8] = []
    /// Where the search for the end of the head resumes.
    private var scanned = 0
    private var requestLine: (method: HTTPMethod, target: String, version: String)?
    private var requestLineEnd = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Adds bytes and says what is known now. Once it returns something other than `incomplete`,
    /// feeding more is pointless (the connection is answered and closed).
    mutating func feed(_ bytes: some Collection<UInt8>) -> Outcome {
        buffer.append(contentsOf: bytes)
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
                return finishHead(fieldBytes: buffer[requestLineEnd..<(index + 2)])
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
        guard let allowed = HTTPMethod(rawValue: method) else {
            if Self.knownMethods.contains(method) {
                return .refuse(.methodNotAllowed, "\(method) is not served here: this endpoint is read-only")
            }
            return .refuse(.notImplemented, "unknown method \(method.prefix(32))")
        }
        requestLine = (allowed, target, version)
        requestLineEnd = index
        return .request(HTTPRequest(method: allowed, path: "/"))
    }

    // MARK: - Header fields

    private func finishHead(fieldBytes: ArraySlice<UInt8>) -> Outcome {
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
        if !named("transfer-encoding").isEmpty {
            return .refuse(.badRequest, "a request body (Transfer-Encoding) is not accepted")
        }
        let lengths = named("content-length")
        if lengths.count > 1 { return .refuse(.badRequest, "more than one Content-Length") }
        if let length = lengths.first {
            guard !length.value.isEmpty, length.value.utf8.allSatisfy({ (48...57).contains($0) }) else {
                return .refuse(.badRequest, "an invalid Content-Length")
            }
            guard length.value.utf8.allSatisfy({ $0 == 48 }) else {
                return .refuse(.badRequest, "a request body is not accepted (GET and HEAD only)")
            }
        }
        guard let (path, query) = Self.splitTarget(line.target) else {
            return .refuse(.badRequest, "the request target must be a path like /metrics")
        }
        return .request(HTTPRequest(method: line.method, path: path, query: query, version: line.version,
                                    headers: fields))
    }

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
