public import SpliceHTTP
package import SpliceLog
package import SpliceMetrics

/// A health check's answer: whether it passed and, for people, why.
package struct HealthCheck: Sendable, Equatable {
    package var ok: Bool
    package var detail: String

    package init(ok: Bool, detail: String) {
        self.ok = ok
        self.detail = detail
    }

    package static func pass(_ detail: String) -> HealthCheck { HealthCheck(ok: true, detail: detail) }
    package static func fail(_ detail: String) -> HealthCheck { HealthCheck(ok: false, detail: detail) }
}

/// What a daemon's operations endpoint serves (``OperationsServer``).
package protocol OperationsSite: Sendable {
    /// `/metrics`.
    var metrics: MetricsRegistry { get }
    /// `/healthz`: the process and its main loop respond. Failing it asks to be restarted.
    func liveness() async -> HealthCheck
    /// `/readyz`: it can do its work now.
    func readiness() async -> HealthCheck
    /// Any other path (the coordinator's status page); nil answers 404.
    func page(_ request: HTTPRequest) async -> HTTPResponse?
}

/// The operations endpoint of `splice coordinator` and `splice worker` (`--metrics-endpoint`):
/// an ``HTTPServer`` answering
///
/// - `GET /metrics` — Prometheus text format 0.0.4;
/// - `GET /healthz` — 200 `ok: …` or 503 `not ok: …`;
/// - `GET /readyz` — the same shape;
/// - whatever the site adds (the coordinator's `/` and `/status.json`).
///
/// It is read-only: nothing it serves changes anything, and nothing secret is on it (no keys, no
/// database URL). It shows job file names, which is why it binds loopback unless told otherwise.
package enum OperationsServer {
    package static func start(on address: HTTPAddress, site: any OperationsSite, logger: Logger) throws(HTTPServerError)
        -> HTTPServer
    {
        let server = try HTTPServer.start(on: address) { request in await respond(to: request, site: site) }
        logger.info("operations endpoint ready", ["address": server.address.description,
                                                  "metrics": server.address.url + "/metrics"])
        if !address.isLoopback {
            logger.info("operations endpoint reachable beyond this machine: it shows job file names and worker names",
                        ["address": server.address.description])
        }
        return server
    }

    static func respond(to request: HTTPRequest, site: any OperationsSite) async -> HTTPResponse {
        switch request.path {
        case "/metrics":
            return .body(await site.metrics.exposition(), contentType: ExpositionFormat.contentType)
        case "/healthz":
            return answer(await site.liveness())
        case "/readyz":
            return answer(await site.readiness())
        default:
            if let page = await site.page(request) { return page }
            return .text("404 Not Found: this endpoint serves /metrics, /healthz and /readyz\n", status: .notFound)
        }
    }

    private static func answer(_ check: HealthCheck) -> HTTPResponse {
        .text((check.ok ? "ok: " : "not ok: ") + check.detail + "\n", status: check.ok ? .ok : .serviceUnavailable)
    }
}

/// A setting of `--metrics-endpoint`: an address, or off.
public enum MetricsEndpointSetting: Sendable, Hashable, CustomStringConvertible {
    case off
    case address(HTTPAddress)

    /// `off`, or `HOST:PORT` (an IP address or `localhost`; `[IPv6]:PORT`).
    public init?(parsing text: String) {
        if ["off", "none", "disabled"].contains(text.lowercased()) {
            self = .off
        } else if let address = HTTPAddress(parsing: text) {
            self = .address(address)
        } else {
            return nil
        }
    }

    public var address: HTTPAddress? {
        if case .address(let address) = self { return address }
        return nil
    }

    public var description: String { address?.description ?? "off" }
}
