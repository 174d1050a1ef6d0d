import SpliceConcurrency
import SpliceCore
import SpliceLog
import SpliceWire
import SpliceDaemon

/// Serves the client API endpoint: every request whose id can be read is answered with exactly
/// one reply carrying that id — a decoded request in a task of its own, a refused one (garbled
/// body, unknown type, a number out of range, another version, oversized: counted by
/// `WireCounters` and logged) with `ERROR` at once. A message without a readable id cannot be
/// answered and is only counted and logged. On graceful shutdown it stops reading, lets the
/// requests in flight reply, and closes.
final class APIService: Service {
    let name = "api"
    private let endpoint: APIServerEndpoint
    private let handler: ClientAPIHandler
    /// What a client's key may do (all of it without CURVE, or for a key `--admin-keys` names
    /// without scopes).
    private let scopes: @Sendable (WirePeer) -> Set<APIScope>
    private let logger: Logger
    private let dropLog = LogThrottle()
    private let requests = InFlightWork()
    private let reading = StoppableTask()

    init(endpoint: APIServerEndpoint, handler: ClientAPIHandler,
         scopes: @escaping @Sendable (WirePeer) -> Set<APIScope> = { _ in Set(APIScope.allCases) }, logger: Logger) {
        self.endpoint = endpoint
        self.handler = handler
        self.scopes = scopes
        self.logger = logger
    }

    func run() async throws {
        let endpoint = self.endpoint
        let handler = self.handler
        let scopes = self.scopes
        let requests = self.requests
        let logger = self.logger
        let dropLog = self.dropLog
        await reading.run {
            while let received = await endpoint.receive() {
                switch received {
                case .message(let envelope, let peer):
                    requests.start {
                        let reply = await handler.reply(to: envelope.message, scopes: scopes(peer))
                        do {
                            try await endpoint.send(reply, to: peer, requestID: envelope.requestID)
                        } catch {
                            logger.info("API reply undeliverable", ["client": "\(peer)", "error": "\(error)"])
                        }
                    }
                case .rejected(let rejection, let peer):
                    // A line a second per reason at most: anyone who reaches the port can flood it.
                    if let suppressed = dropLog.admit(rejection.reason.rawValue) {
                        logger.warning("API request dropped", ["reason": rejection.reason.rawValue,
                                                               "detail": rejection.detail, "client": "\(peer)",
                                                               "answered": rejection.requestID != nil,
                                                               "suppressed": suppressed])
                    }
                    guard let id = rejection.requestID else { continue }
                    requests.start {
                        do {
                            try await endpoint.send(.error(APIError(refusing: rejection)), to: peer, requestID: id)
                        } catch {
                            logger.debug("API reply undeliverable", ["client": "\(peer)", "error": "\(error)"])
                        }
                    }
                }
            }
        }
        _ = await requests.drained(within: .seconds(5))
    }

    func shutdown() async {
        await reading.stop()
        // Requests in flight get their answers; a store that does not answer is not waited for long.
        _ = await requests.drained(within: .seconds(5))
    }
}
