/// A status line's code and reason phrase.
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let ok = HTTPStatus(200, "OK")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    public static let headerFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")

    public var description: String { String(code) + " " + reason }
}

/// The methods the server answers. Everything else is refused before a handler sees it: known
/// methods with 405 (`Allow: GET, HEAD`), unknown ones with 501. Nothing served can change state.
public enum HTTPMethod: String, Sendable, Hashable {
    case get = "GET"
    case head = "HEAD"
}

/// A request that passed every check: GET or HEAD, an origin-form path, HTTP/1.0 or 1.1, a Host
/// header (1.1), no body, within the size limits.
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

    public init(method: HTTPMethod, path: String, query: String? = nil, version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
    }

    /// The value of the first field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.version == rhs.version
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(path)
        hasher.combine(query)
    }
}

/// What a handler answers. The server adds `Content-Length`, `Date`, `Connection: close`,
/// `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`, and leaves the body out for
/// HEAD.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    /// Further header fields (`Content-Type`, `Content-Security-Policy`…).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: HTTPStatus, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
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

    /// The answer to a request the server refused, saying why in one line.
    static func refusal(_ status: HTTPStatus, _ reason: String) -> HTTPResponse {
        var response = text(status.description + ": " + reason + "\n", status: status)
        if status == .methodNotAllowed { response.headers.append(("Allow", "GET, HEAD")) }
        return response
    }

    /// The bytes on the wire: status line, fields, blank line, and the body unless `head`.
    func serialized(head: Bool, date: String) -> [UInt8] {
        var text = "HTTP/1.1 " + status.description + "\r\n"
        text += "Date: " + date + "\r\n"
        text += "Server: splice\r\n"
        for field in headers { text += field.name + ": " + field.value + "\r\n" }
        text += "Content-Length: " + String(body.count) + "\r\n"
        text += "Cache-Control: no-store\r\n"
        text += "X-Content-Type-Options: nosniff\r\n"
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }
}
