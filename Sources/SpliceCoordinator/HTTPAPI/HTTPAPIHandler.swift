import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceHTTP
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceWire
import Synchronization

/// Answers the HTTP API (`/v1`, docs/api.md): jobs submitted, read, listed, cancelled and
/// followed as Server-Sent Events, the workers, and the OpenAPI document. Every request but the
/// document's needs a bearer token with the scope its route names; errors are problem details
/// (``Problem``), never a 500 for anything a client sent.
final class HTTPAPIHandler: Sendable {
    /// What a route needs, and which methods it takes.
    private enum Route {
        case jobs
        case job(JobID?)
        case cancel(JobID?)
        case events(JobID?)
        case workers

        /// The methods the OpenAPI document gives it (`Allow`); HEAD is answered wherever GET is.
        var methods: [HTTPMethod] {
            switch self {
            case .jobs: [.get, .post]
            case .cancel: [.post]
            case .job, .events, .workers: [.get]
            }
        }

        func takes(_ method: HTTPMethod) -> Bool {
            methods.contains(method) || (method == .head && methods.contains(.get))
        }

        func scope(for method: HTTPMethod) -> APIScope {
            switch self {
            case .jobs where method == .post: .submit
            case .cancel: .cancel
            default: .read
            }
        }
    }

    /// Bodies are JSON objects nested at most this deep (settings need 4).
    static let maxJSONDepth = 32

    /// Active (its term submits and knows the running attempts) or standby (reads only).
    private let role: CoordinatorRole
    /// This coordinator's name, for a standby's refusal.
    private let name: String
    private let reads: JobRepository
    private let api: ClientAPIHandler
    private let tokens: TokenAuthority
    private let limiter: RateLimiter
    private let events: JobEventHub
    private let metrics: CoordinatorMetrics
    private let logger: Logger
    /// Idempotency keys (as stored) whose first request is being answered now.
    private let keysInFlight = Mutex<Set<String>>([])

    init(role: CoordinatorRole, name: String, reads: JobRepository, api: ClientAPIHandler, tokens: TokenAuthority,
         limiter: RateLimiter, events: JobEventHub, metrics: CoordinatorMetrics, logger: Logger) {
        self.role = role
        self.name = name
        self.reads = reads
        self.api = api
        self.tokens = tokens
        self.limiter = limiter
        self.events = events
        self.metrics = metrics
        self.logger = logger
    }

    // MARK: - Routing

    /// The answer to `request`; never throws.
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let response = await route(request)
        metrics.httpRequests.increment([String(response.status.code)])
        return response
    }

    private func route(_ request: HTTPRequest) async -> HTTPResponse {
        let path = request.path
        if path == "/v1/openapi.json" {
            if request.method == .options { return options([.get], path: path) }
            guard request.method == .get || request.method == .head else { return methodNotAllowed([.get], path: path) }
            return .body(OpenAPIDocument.text, contentType: "application/json")
        }
        guard let route = Self.route(path) else {
            return Problem(.notFound, "no resource at \(path.prefix(200)); see /v1/openapi.json").response(instance: path)
        }
        if request.method == .options { return options(route.methods, path: path) }
        guard route.takes(request.method) else { return methodNotAllowed(route.methods, path: path) }
        let identity: TokenIdentity
        switch await tokens.verify(request.header("authorization")) {
        case .valid(let valid):
            identity = valid
        case .missing:
            return Problem(.unauthorized, "send `Authorization: Bearer <token>`; `splice tokens create` makes one",
                           headers: [("WWW-Authenticate", "Bearer realm=\"splice\"")]).response(instance: path)
        case .invalid(let reason):
            return Problem(.unauthorized, reason,
                           headers: [("WWW-Authenticate", "Bearer realm=\"splice\", error=\"invalid_token\"")])
                .response(instance: path)
        case .unavailable:
            return Problem(.unavailable, "the job store is not answering; try again",
                           headers: [("Retry-After", "1")]).response(instance: path)
        }
        let scope = route.scope(for: request.method)
        guard identity.record.scopes.contains(scope) else {
            return Problem(.forbidden, "token \(identity.record.name) has the scopes "
                + APIScope.list(identity.record.scopes) + "; this needs \(scope.rawValue)",
                headers: [("WWW-Authenticate", "Bearer realm=\"splice\", error=\"insufficient_scope\", scope=\"\(scope.rawValue)\"")])
                .response(instance: path)
        }
        if let wait = limiter.admit(identity.record) {
            metrics.httpRateLimited.increment()
            return Problem(.rateLimited, "token \(identity.record.name) is over its rate limit; retry in \(wait) s",
                           headers: [("Retry-After", String(wait))]).response(instance: path)
        }
        do {
            switch route {
            case .jobs where request.method == .post: return try await submit(request, identity: identity)
            case .jobs: return try await list(request)
            case .job(let id): return try await job(try found(id, path))
            case .cancel(let id): return try await cancel(try found(id, path))
            case .events(let id): return try await stream(try found(id, path), request: request)
            case .workers: return try await workers()
            }
        } catch let problem as Problem {
            return problem.response(instance: path)
        } catch let error as StoreError where error.isRetryable {
            return Problem(.unavailable, "the job store is not answering; try again", headers: [("Retry-After", "1")])
                .response(instance: path)
        } catch {
            logger.error("HTTP API request failed", ["path": path, "error": "\(error)"])
            return Problem(.internal, "the coordinator could not answer: \(error)").response(instance: path)
        }
    }

    /// `/v1/jobs`, `/v1/jobs/{id}`, `/v1/jobs/{id}/cancel`, `/v1/jobs/{id}/events`, `/v1/workers`;
    /// an id that is not a UUID is kept as nil (answered 404 once the token is checked).
    private static func route(_ path: String) -> Route? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard parts.first == "v1" else { return nil }
        let rest = Array(parts.dropFirst())
        switch rest.count {
        case 1 where rest[0] == "jobs": return .jobs
        case 1 where rest[0] == "workers": return .workers
        case 2 where rest[0] == "jobs": return .job(JobID(String(rest[1])))
        case 3 where rest[0] == "jobs" && rest[2] == "cancel": return .cancel(JobID(String(rest[1])))
        case 3 where rest[0] == "jobs" && rest[2] == "events": return .events(JobID(String(rest[1])))
        default: return nil
        }
    }

    private func found(_ id: JobID?, _ path: String) throws(Problem) -> JobID {
        guard let id else { throw Problem(.notFound, "no job \(path.split(separator: "/").dropFirst(2).first ?? ""); "
            + "job ids are UUIDs") }
        return id
    }

    /// OPTIONS: what the resource takes, no body.
    private func options(_ methods: [HTTPMethod], path: String) -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [("Allow", methods.map(\.rawValue).joined(separator: ", "))])
    }

    private func methodNotAllowed(_ methods: [HTTPMethod], path: String) -> HTTPResponse {
        Problem(.methodNotAllowed, "\(path) takes " + methods.map(\.rawValue).joined(separator: ", "),
                headers: [("Allow", methods.map(\.rawValue).joined(separator: ", "))]).response(instance: path)
    }

    // MARK: - Submitting

    private func submit(_ request: HTTPRequest, identity: TokenIdentity) async throws -> HTTPResponse {
        let contentType = (request.header("content-type") ?? "").lowercased()
        guard contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == "application/json" else {
            throw Problem(.unsupportedMediaType, "send the job as `Content-Type: application/json`")
        }
        let body = try CreateJobBody(request.body, maxDepth: Self.maxJSONDepth)
        guard let term = role.term else { throw notActive() }
        var key: String?
        if let header = request.header("idempotency-key") {
            guard (1...255).contains(header.utf8.count), header.utf8.allSatisfy({ (33...126).contains($0) }) else {
                throw Problem(.invalidParameter, "`Idempotency-Key` must be 1 to 255 visible ASCII characters",
                              field: "Idempotency-Key")
            }
            // Keys are the client's: one token's key never finds another token's job.
            key = "http:" + identity.record.id.uuidString.lowercased() + ":" + header
        }
        if let key {
            let first = keysInFlight.withLock { $0.insert(key).inserted }
            guard first else {
                throw Problem(.idempotencyKeyInUse, "a request with this Idempotency-Key is still being answered; "
                    + "retry once it is", field: "Idempotency-Key", headers: [("Retry-After", "1")])
            }
        }
        defer { if let key { _ = keysInFlight.withLock { $0.remove(key) } } }
        let submission = JobSubmissionRequest(
            input: body.input, output: body.output, settings: JSONPayload(body.settings), settingsField: "settings",
            priority: body.priority, key: key, keyForMessages: request.header("idempotency-key"),
            keyField: "Idempotency-Key", reference: body.reference, webhook: body.webhook, token: identity.record.id,
            tokenInputRoots: identity.inputRoots, tokenOutputRoots: identity.outputRoots)
        let outcome: (job: Job, created: Bool)
        do {
            outcome = try await term.submissions.submit(submission)
        } catch {
            throw Self.problem(error)
        }
        let resource = JobResource(job: outcome.job, progress: JobProgress(), running: RunningProgress(),
                                   webhookHasOwnSecret: body.webhook?.secret != nil, withSettings: true)
        return try json(resource, status: outcome.created ? .created : .ok,
                        headers: [("Location", "/v1/jobs/\(outcome.job.id)")])
    }

    /// A refused submission as the problem the HTTP API answers.
    static func problem(_ refusal: SubmissionRefusal) -> Problem {
        let kind: Problem.Kind = switch refusal.code {
        case .outputExists: .outputExists
        case .conflict: .idempotencyKeyReused
        case .forbidden: .pathNotAllowed
        case .unavailable: .unavailable
        case .internal: .internal
        default: .invalidField
        }
        return Problem(kind, refusal.message, field: refusal.field)
    }

    // MARK: - Reading

    private func job(_ id: JobID) async throws -> HTTPResponse {
        guard let detail = try await reads.jobDetail(id: id) else { throw Self.notFound(id) }
        let deliveries = detail.job.webhookURL == nil ? nil : try await reads.webhookDeliveries(ofJob: id)
        let running = detail.job.state == .running ? await runningProgress(ofJob: id) : RunningProgress()
        return try json(JobResource(
            job: detail.job, progress: detail.progress, running: running, segments: detail.segments,
            waiting: detail.waiting, deliveries: deliveries, webhookHasOwnSecret: detail.job.hasOwnWebhookSecret,
            withSettings: true))
    }

    private func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = QueryParameters(request.query)
        var states: [JobState]?
        if let text = query["state"] {
            var parsed: [JobState] = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let state = JobState(rawValue: String(name)) else {
                    throw Problem(.invalidParameter, "`state` '\(text.prefix(100))' is not a job state ("
                        + JobState.allCases.map(\.rawValue).joined(separator: ", ") + ")", field: "state")
                }
                parsed.append(state)
            }
            states = parsed
        }
        let reference = query["reference"]
        if let reference, !(1...256).contains(reference.utf8.count) {
            throw Problem(.invalidParameter, "`reference` must be 1 to 256 bytes long", field: "reference")
        }
        var limit = 50
        if let text = query["limit"] {
            guard let value = Int(text), WireLimits.listLimit.contains(value) else {
                throw Problem(.invalidParameter, "`limit` must be an integer from 1 to 1000", field: "limit")
            }
            limit = value
        }
        var cursor: JobPageCursor?
        if let text = query["cursor"] {
            guard let parsed = PageCursor.decode(text) else {
                throw Problem(.invalidParameter, "`cursor` is not a cursor this API gave out", field: "cursor")
            }
            cursor = parsed
        }
        let page = try await reads.jobPage(states: states, reference: reference, after: cursor, limit: limit)
        var resources: [JobResource] = []
        for (job, progress) in page.jobs {
            let running = job.state == .running ? await runningProgress(ofJob: job.id) : RunningProgress()
            resources.append(JobResource(job: job, progress: progress, running: running))
        }
        return try json(JobListResource(jobs: resources, next: page.next.map(PageCursor.encode)))
    }

    private func cancel(_ id: JobID) async throws -> HTTPResponse {
        do {
            _ = try await api.cancel(id)
        } catch let error as APIError where error.code == .notFound {
            throw Self.notFound(id)
        } catch let error as APIError where error.code == .notActive {
            throw notActive()
        }
        return try await job(id)
    }

    private func stream(_ id: JobID, request: HTTPRequest) async throws -> HTTPResponse {
        var after: Int64 = 0
        if let text = request.header("last-event-id") {
            guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw Problem(.invalidParameter, "`Last-Event-ID` must be an event id this stream sent",
                              field: "Last-Event-ID")
            }
            after = value
        }
        guard let response = try await events.subscribe(job: id, after: after) else { throw Self.notFound(id) }
        return response
    }

    private func workers() async throws -> HTTPResponse {
        try json(WorkerListResource(workers: try await api.workerInfos().map(WorkerResource.init)))
    }

    /// The running attempts' progress, which only the active term's shell knows.
    private func runningProgress(ofJob job: JobID) async -> RunningProgress {
        await role.term?.shell.runningProgress(ofJob: job) ?? RunningProgress()
    }

    /// A write to a standby: 503, naming the active coordinator's HTTP API when it is known
    /// (docs/coordinator.md, Standby coordinators), so a client or a load balancer goes there.
    private func notActive() -> Problem {
        if let active = role.leader?.active {
            let there = active.httpEndpoint.map { "; send it to \($0)v1" } ?? " (which serves no HTTP API)"
            return Problem(.notActive, "this coordinator (\(name)) is a standby and writes nothing; the active coordinator "
                + "is \(active.holderName ?? "unnamed") (epoch \(active.epoch))" + there,
                headers: [("Retry-After", "1")] + (active.httpEndpoint.map { [("Splice-Active-Coordinator", $0)] } ?? []))
        }
        return Problem(.notActive, "this coordinator (\(name)) is a standby and no coordinator is active right now (one "
            + "is taking over, or the database does not answer); try again", headers: [("Retry-After", "1")])
    }

    // MARK: - Answers

    private func json(_ value: some Encodable, status: HTTPStatus = .ok,
                      headers: [(name: String, value: String)] = []) throws -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                     body: try JSON.encode(value) + [10])
    }

    static func notFound(_ id: JobID) -> Problem {
        Problem(.notFound, "no job \(id)")
    }
}

/// The body of `POST /v1/jobs`, read field by field so that every refusal names its field; unknown
/// fields are refused (a misspelt `refrence` shows instead of being dropped).
struct CreateJobBody: Sendable {
    var input: String
    var output: String
    var settings: JSONValue
    var priority: Int
    var reference: String?
    var webhook: JobWebhook?

    static let fields: Set<String> = ["input", "output", "settings", "priority", "reference", "webhook"]

    init(_ bytes: [UInt8], maxDepth: Int) throws(Problem) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes, maxDepth: maxDepth)
        } catch {
            throw Problem(.invalidJSON, "the body is not JSON: \(error.message)")
        }
        guard case .object(let object) = document else { throw Problem(.invalidJSON, "the body must be a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw Problem(.invalidField, "`\(unknown.prefix(100))` is not a field of a job (docs/api.md)",
                          field: String(unknown.prefix(100)))
        }
        input = try Self.string(object, "input")
        output = try Self.string(object, "output")
        switch object["priority"] {
        case nil, .null?: priority = 0
        case .integer(let value)?:
            guard let fitting = Int(exactly: value), WireLimits.priority.contains(fitting) else {
                throw Problem(.invalidField, "`priority` must be from -1000 to 1000", field: "priority")
            }
            priority = fitting
        default: throw Problem(.invalidField, "`priority` must be an integer", field: "priority")
        }
        switch object["reference"] {
        case nil, .null?: reference = nil
        case .string(let value)?: reference = value
        default: throw Problem(.invalidField, "`reference` must be a string", field: "reference")
        }
        switch object["webhook"] {
        case nil, .null?:
            webhook = nil
        case .object(let fields)?:
            if let unknown = fields.keys.sorted().first(where: { $0 != "url" && $0 != "secret" }) {
                throw Problem(.invalidField, "`webhook.\(unknown.prefix(100))` is not a field of a webhook",
                              field: "webhook." + String(unknown.prefix(100)))
            }
            guard case .string(let url)? = fields["url"] else {
                throw Problem(.invalidField, "`webhook.url` must be a string", field: "webhook.url")
            }
            var secret: String?
            switch fields["secret"] {
            case nil, .null?: secret = nil
            case .string(let value)?: secret = value
            default: throw Problem(.invalidField, "`webhook.secret` must be a string", field: "webhook.secret")
            }
            webhook = JobWebhook(url: url, secret: secret)
        default:
            throw Problem(.invalidField, "`webhook` must be an object with `url` and, optionally, `secret`",
                          field: "webhook")
        }
        var settings: [String: JSONValue]
        switch object["settings"] {
        case nil, .null?: settings = [:]
        case .object(let fields)?: settings = fields
        default: throw Problem(.invalidField, "`settings` must be an object (docs/api.md)", field: "settings")
        }
        // The CLI's default container: the output's extension (.m3u8/.mpd: a CMAF package, mp4).
        if settings["fileType"] == nil {
            let ext = URL(fileURLWithPath: output).pathExtension.lowercased()
            let type = ["m3u8", "mpd"].contains(ext) ? .mp4 : OutputFileType(pathExtension: ext)
            guard let type else {
                throw Problem(.invalidField, "`settings.fileType` is missing and the output's extension does not name "
                    + "a container (.mp4, .mov, .mkv, .webm)", field: "settings.fileType")
            }
            settings["fileType"] = .string(type.rawValue)
        }
        self.settings = .object(settings)
    }

    private static func string(_ object: [String: JSONValue], _ name: String) throws(Problem) -> String {
        guard case .string(let value)? = object[name] else {
            throw Problem(.invalidField, "`\(name)` must be a string", field: name)
        }
        guard !value.isEmpty, value.utf8.count <= 4096 else {
            throw Problem(.invalidField, "`\(name)` must be 1 to 4096 bytes long", field: name)
        }
        return value
    }
}

/// The `cursor` of a page: the last job's submission time (µs) and id, base64url, opaque to clients.
enum PageCursor {
    static func encode(_ cursor: JobPageCursor) -> String {
        let text = "\(cursor.createdMicroseconds).\(cursor.id)"
        return Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> JobPageCursor? {
        guard text.utf8.count <= 200 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let plain = String(data: data, encoding: .utf8) else { return nil }
        let parts = plain.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let micros = Int64(parts[0]), let id = JobID(String(parts[1])) else { return nil }
        return JobPageCursor(createdMicroseconds: micros, id: id)
    }
}

/// A query string's parameters (`a=1&b=x%20y`), percent- and plus-decoded; the first of a
/// repeated name wins.
struct QueryParameters {
    private var values: [String: String] = [:]

    init(_ query: String?) {
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), values[name] == nil else { continue }
            values[name] = parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""
        }
    }

    subscript(name: String) -> String? { values[name] }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
