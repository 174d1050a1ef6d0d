import SpliceWire
import Synchronization

/// One DEALER connected to the coordinator's API endpoint, with the two tasks that serve it:
/// one reads replies and hands them to the `ReplyRouter`, one follows the socket's connection
/// events so that a call that gets no reply can say why (nothing listening, a refused key, a
/// failed handshake). `SpliceClient` replaces the whole connection when it reconnects.
final class ClientConnection: Sendable {
    /// What the socket has seen of the coordinator, for the message of a call that timed out.
    enum Contact: Sendable, Equatable {
        /// No TCP connection has been made.
        case none
        /// A TCP connection was made, but no handshake has completed on it (yet).
        case connected
        /// A handshake completed: something speaking ZeroMQ, with matching keys, is there.
        case handshaken
        /// The handshake failed: wrong server key, or CURVE on one side only.
        case handshakeFailed
        /// The coordinator's ZAP handler refused this client's key.
        case refused(status: Int)
    }

    let endpoint: APIClientEndpoint
    let address: String
    private let contactState: Mutex<Contact>
    private let tasks: Mutex<[Task<Void, Never>]>

    private init(endpoint: APIClientEndpoint, address: String) {
        self.endpoint = endpoint
        self.address = address
        contactState = Mutex(.none)
        tasks = Mutex([])
    }

    /// What the socket has seen so far.
    var contact: Contact { contactState.withLock { $0 } }

    /// Connects a DEALER to `address` (in the background: this returns before the coordinator is
    /// reached) and starts routing its replies to `router`.
    static func open(
        _ address: String, configuration: SpliceClientConfiguration, context: WireContext, router: ReplyRouter
    ) async throws(SpliceClientError) -> ClientConnection {
        let wire: WireEndpoint
        do {
            wire = try await WireEndpoint.connect(
                address, type: .dealer, context: context, options: configuration.socketOptions(for: address))
        } catch where error.code == .invalidArgument {
            throw SpliceClientError(
                .invalidConfiguration, "'\(address)' is not a coordinator endpoint; expected tcp://HOST:PORT "
                    + "(the coordinator's --api-endpoint, port 7451 by default)")
        } catch {
            throw SpliceClientError(
                .transport, "cannot open a connection to \(address): \(error.message)")
        }
        let connection = ClientConnection(endpoint: APIClientEndpoint(wire), address: address)
        connection.start(router: router)
        return connection
    }

    private func start(router: ReplyRouter) {
        let endpoint = self.endpoint
        let reader = Task {
            while let received = await endpoint.receive() {
                // Garbled or foreign-protocol messages are counted by the endpoint and dropped.
                if case .message(let envelope, _) = received {
                    router.deliver(envelope.message, id: envelope.requestID)
                }
            }
        }
        let watcher = Task { [weak self] in
            for await event in endpoint.wire.events {
                guard let self else { return }
                if let refusal = self.record(event.kind) { router.failAll(refusal) }
            }
        }
        tasks.withLock { $0 = [reader, watcher] }
    }

    /// Notes a connection event; returns the error to end every waiting call with when the
    /// coordinator refused this client's key (no reply can come on this connection).
    private func record(_ kind: WireEvent.Kind) -> SpliceClientError? {
        let contact = contactState.withLock { contact -> Contact in
            switch kind {
            case .connected where contact == .none:
                contact = .connected
            case .handshakeSucceeded:
                contact = .handshaken
            case .disconnected where contact == .handshaken:
                // The coordinator went away (stopped, killed, restarting): as if never reached.
                // A connection that never completed its handshake keeps saying so.
                contact = .none
            case .handshakeFailedProtocol:
                // Not `.handshakeFailed` (no detail): a connection closed mid-handshake by a
                // coordinator that is shutting down reports that too.
                contact = .handshakeFailed
            case .authenticationFailed(let status):
                contact = .refused(status: status)
            default:
                break
            }
            return contact
        }
        guard case .refused = contact else { return nil }
        return refusal
    }

    /// The error for a coordinator that refused this client's key, once it has; nil before.
    var refusal: SpliceClientError? {
        guard case .refused(let status) = contact else { return nil }
        return refusedError(status: status)
    }

    private func refusedError(status: Int) -> SpliceClientError {
        SpliceClientError(
            .refused, "the coordinator at \(address) refused this client's key (ZAP status \(status)); add its public "
                + "key to the coordinator's --admin-keys file, or use --secret-key with a key that is there")
    }

    /// The error for a call that got no reply within `timeout`, worded after what the socket saw.
    /// A refused key is final; silence and a failed handshake may end when the coordinator is
    /// back (or its keys are fixed), so they are retryable.
    func unreachableError(after timeout: Duration) -> SpliceClientError {
        switch contact {
        case .none:
            return SpliceClientError(
                .unreachable, "no coordinator answered at \(address); is `splice coordinator` running?", isRetryable: true)
        case .handshaken:
            return SpliceClientError(
                .unreachable, "the coordinator at \(address) did not answer within \(SpliceClient.text(timeout)); is that "
                    + "its API endpoint (--api-endpoint, port 7451 by default), and is it healthy?", isRetryable: true)
        case .connected, .handshakeFailed:
            // With a wrong server key the coordinator just drops the connection: the client sees
            // a connection whose handshake never completes, not a handshake error.
            return SpliceClientError(
                .unreachable, "the connection handshake with \(address) failed; check that it is the coordinator's API "
                    + "endpoint (port 7451 by default), that --server-key is the coordinator's .pub, and that both "
                    + "sides use CURVE keys or neither does", isRetryable: true)
        case .refused(let status):
            return refusedError(status: status)
        }
    }

    /// Stops the tasks and closes the socket without lingering (unsent requests are safe to drop).
    func close() async {
        let tasks = self.tasks.withLock { $0 }
        await endpoint.close(linger: .zero)
        for task in tasks { task.cancel() }
    }
}
