/// A status line's code and reason phrase.
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let ok = HTTPStatus(200, "OK")
    public static let created = HTTPStatus(201, "Created")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let notAcceptable = HTTPStatus(406, "Not Acceptable")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let conflict = HTTPStatus(409, "Conflict")
    public static let lengthRequired = HTTPStatus(411, "Length Required")
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    public static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    public static let unprocessableContent = HTTPStatus(422, "Unprocessable Content")
    public static let tooManyRequests = HTTPStatus(429, "Too Many Requests")
    public static let headerFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")

    public var description: String { String(code) + " " + reason }
}

/// The methods a server may answer (``HTTPServer/Limits/methods``; GET and HEAD unless told
/// otherwise). Everything else is refused before a handler sees it: known methods with 405
/// (`Allow` lists the served ones), unknown ones with 501.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    case get = "GET"
    case head = "HEAD"
    case post = "POST"
    case put = "PUT"
    case delete = "DELETE"
    case patch = "PATCH"
    case options = "OPTIONS"
}

/// A request that passed every check: a method the server serves, an origin-form path, HTTP/1.0
/// or 1.1, a Host header (1.1), a body only on POST and within the limit, within the size limits.
public struct HTTPRequest: Sendable, Hashable {
    public var method: HTTPMethod
    /// The path, without the query (`/metrics`), as sent (no percent-decoding).
    public var path: String
    /// What follows `?`, if anything (`refresh=1`).
    public var query: String?
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// Header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body: exactly `Content-Length` bytes (empty without one).
    public var body: [UInt8]

    public init(method: HTTPMethod, path: String, query: String? = nil, version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// Whether the client wants the connection closed after the answer: HTTP/1.0 unless it asked
    /// `Connection: keep-alive`, or `Connection: close`.
    public var wantsClose: Bool {
        let options = (header("connection") ?? "").lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if options.contains("close") { return true }
        return version == "HTTP/1.0" && !options.contains("keep-alive")
    }

    /// The value of the first field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.version == rhs.version
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
            && lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(path)
        hasher.combine(query)
    }
}

/// What a handler answers. The server adds `Content-Length`, `Date`, `Cache-Control: no-store`
/// and `X-Content-Type-Options: nosniff`, `Connection: close` when the connection ends after it,
/// and leaves the body out for HEAD. A response with a ``stream`` has no length: its body is what
/// the handler writes to the stream until it finishes it (or the client leaves), and the
/// connection closes after it (Server-Sent Events).
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    /// Further header fields (`Content-Type`, `Content-Security-Policy`…).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// A body written over time instead of ``body``.
    public var stream: HTTPResponseStream?

    public init(status: HTTPStatus, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                stream: HTTPResponseStream? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.stream = stream
    }

    /// `text/plain; charset=utf-8`.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    /// A body with a content type of the caller's choosing.
    public static func body(_ text: String, contentType: String, status: HTTPStatus = .ok,
                            headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)] + headers, body: Array(text.utf8))
    }

    /// The answer to a request the server refused, saying why in one line (the server's own
    /// words, unless its ``HTTPServer/Refusal`` renders them otherwise).
    public static func refusal(_ status: HTTPStatus, _ reason: String) -> HTTPResponse {
        text(status.description + ": " + reason + "\n", status: status)
    }

    /// The bytes on the wire: status line, fields, blank line, and the body unless `head`. A
    /// streamed response has no `Content-Length` and always ends the connection.
    func serialized(head: Bool, date: String, close: Bool) -> [UInt8] {
        var text = "HTTP/1.1 " + status.description + "\r\n"
        text += "Date: " + date + "\r\n"
        text += "Server: splice\r\n"
        for field in headers { text += field.name + ": " + field.value + "\r\n" }
        if stream == nil { text += "Content-Length: " + String(body.count) + "\r\n" }
        text += "Cache-Control: no-store\r\n"
        text += "X-Content-Type-Options: nosniff\r\n"
        text += close || stream != nil ? "Connection: close\r\n\r\n" : "\r\n"
        return Array(text.utf8) + (head || stream != nil ? [] : body)
    }
}
