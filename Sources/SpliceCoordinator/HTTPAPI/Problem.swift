import SpliceHTTP
import SpliceJSON

/// An error of the HTTP API as RFC 9457 "Problem Details" (`application/problem+json`): a stable
/// `type` per kind of error that clients switch on, the HTTP status, a `title` per type, a
/// `detail` for people, the request path as `instance`, and `field` — the request field at fault
/// (`settings.video.quality`, `limit`, `Idempotency-Key`) when there is one. docs/api.md lists the
/// types.
struct Problem: Error, Sendable {
    /// The kinds of error, each with its status and title. The raw value is the last part of the
    /// type URI (`urn:splice:problem:invalid-field`); none is ever renamed.
    enum Kind: String, Sendable, CaseIterable {
        case invalidJSON = "invalid-json"
        case invalidParameter = "invalid-parameter"
        case invalidField = "invalid-field"
        case unauthorized
        case forbidden
        case pathNotAllowed = "path-not-allowed"
        case notFound = "not-found"
        case methodNotAllowed = "method-not-allowed"
        case notAcceptable = "not-acceptable"
        case outputExists = "output-exists"
        case idempotencyKeyInUse = "idempotency-key-in-use"
        case idempotencyKeyReused = "idempotency-key-reused"
        case unsupportedMediaType = "unsupported-media-type"
        case rateLimited = "rate-limited"
        case unavailable
        /// A write sent to a standby coordinator (docs/coordinator.md, Standby coordinators).
        case notActive = "not-active"
        case `internal`
        // The server's own refusals of malformed HTTP (before the API sees the request).
        case badRequest = "bad-request"
        case requestTimeout = "request-timeout"
        case lengthRequired = "length-required"
        case requestTooLarge = "request-too-large"
        case uriTooLong = "uri-too-long"
        case headerTooLarge = "header-too-large"
        case notImplemented = "not-implemented"
        case versionNotSupported = "version-not-supported"

        var status: HTTPStatus {
            switch self {
            case .invalidJSON, .invalidParameter, .badRequest: .badRequest
            case .invalidField, .idempotencyKeyReused: .unprocessableContent
            case .unauthorized: .unauthorized
            case .forbidden, .pathNotAllowed: .forbidden
            case .notFound: .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .notAcceptable: .notAcceptable
            case .outputExists, .idempotencyKeyInUse: .conflict
            case .unsupportedMediaType: .unsupportedMediaType
            case .rateLimited: .tooManyRequests
            case .unavailable, .notActive: .serviceUnavailable
            case .internal: .internalServerError
            case .requestTimeout: .requestTimeout
            case .lengthRequired: .lengthRequired
            case .requestTooLarge: .contentTooLarge
            case .uriTooLong: .uriTooLong
            case .headerTooLarge: .headerFieldsTooLarge
            case .notImplemented: .notImplemented
            case .versionNotSupported: .httpVersionNotSupported
            }
        }

        var title: String {
            switch self {
            case .invalidJSON: "The body is not a JSON object"
            case .invalidParameter: "A query parameter is invalid"
            case .invalidField: "A field of the request is invalid"
            case .unauthorized: "A valid bearer token is needed"
            case .forbidden: "The token lacks the scope this needs"
            case .pathNotAllowed: "The path is outside the token's roots"
            case .notFound: "No such resource"
            case .methodNotAllowed: "The method is not allowed here"
            case .notAcceptable: "This resource is not served in the accepted types"
            case .outputExists: "The output exists"
            case .idempotencyKeyInUse: "A request with this Idempotency-Key is in progress"
            case .idempotencyKeyReused: "The Idempotency-Key was used for another request"
            case .unsupportedMediaType: "The body must be application/json"
            case .rateLimited: "Too many requests"
            case .unavailable: "The coordinator cannot answer now"
            case .notActive: "This coordinator is a standby; the active one takes writes"
            case .internal: "The coordinator failed unexpectedly"
            case .badRequest: "The request is malformed"
            case .requestTimeout: "The request did not arrive in time"
            case .lengthRequired: "The body needs a Content-Length"
            case .requestTooLarge: "The body is too large"
            case .uriTooLong: "The request target is too long"
            case .headerTooLarge: "The request head is too large"
            case .notImplemented: "The method is not known"
            case .versionNotSupported: "The HTTP version is not supported"
            }
        }

        var type: String { "urn:splice:problem:" + rawValue }

        /// The kind the server's own refusal with `status` is.
        init(refusal status: HTTPStatus) {
            self = switch status.code {
            case 405: .methodNotAllowed
            case 408: .requestTimeout
            case 411: .lengthRequired
            case 413: .requestTooLarge
            case 414: .uriTooLong
            case 431: .headerTooLarge
            case 501: .notImplemented
            case 503: .unavailable
            case 505: .versionNotSupported
            default: .badRequest
            }
        }
    }

    var kind: Kind
    var detail: String
    var field: String?
    /// Further header fields (`WWW-Authenticate`, `Retry-After`, `Allow`).
    var headers: [(name: String, value: String)] = []

    init(_ kind: Kind, _ detail: String, field: String? = nil, headers: [(name: String, value: String)] = []) {
        self.kind = kind
        self.detail = detail
        self.field = field
        self.headers = headers
    }

    private struct Body: Encodable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let instance: String?
        let field: String?
    }

    /// The response, `instance` naming the request's path.
    func response(instance: String?) -> HTTPResponse {
        let body = Body(type: kind.type, title: kind.title, status: kind.status.code, detail: detail,
                        instance: instance, field: field)
        let bytes = (try? JSON.encode(body)) ?? Array("{}".utf8)
        return HTTPResponse(status: kind.status, headers: [("Content-Type", "application/problem+json")] + headers,
                            body: bytes + [10])
    }

    /// The server's refusal of malformed HTTP, as a problem.
    static func refusal(_ status: HTTPStatus, _ reason: String) -> HTTPResponse {
        Problem(Kind(refusal: status), reason).response(instance: nil)
    }
}
