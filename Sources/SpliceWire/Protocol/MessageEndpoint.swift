internal import Foundation
internal import SpliceConcurrency

/// What a `MessageEndpoint` received: a decoded message, or a rejection (already counted) that
/// the caller may log or answer (e.g. DISCONNECT `protocol-error`) before dropping it.
public enum Received<Message: WireMessage>: Sendable {
    case message(Envelope<Message>, from: WirePeer)
    case rejected(WireRejection, from: WirePeer)

    /// The sender.
    public var peer: WirePeer {
        switch self {
        case .message(_, let peer), .rejected(_, let peer): peer
        }
    }
}

/// A `WireEndpoint` speaking one protocol: it decodes `Inbound` messages (counting and
/// reporting rejections) and encodes `Outbound` ones.
public final class MessageEndpoint<Inbound: WireMessage, Outbound: WireMessage>: Sendable {
    /// The underlying socket endpoint.
    public let wire: WireEndpoint
    public let codec: WireCodec

    /// Wraps an open endpoint; the codec's size limit is the endpoint's.
    public init(_ wire: WireEndpoint) {
        self.wire = wire
        self.codec = WireCodec(maxMessageBytes: wire.options.maxMessageBytes)
    }

    /// Received / delivered / dropped counts (shared with `wire`).
    public var counters: WireCounters { wire.counters }

    /// The next message or rejection; nil once the endpoint is closed, or when the calling task
    /// is cancelled.
    public func receive() async -> Received<Inbound>? {
        guard let delivery = await wire.receiveUncounted() else { return nil }
        return decode(delivery)
    }

    /// The messages (and rejections) waiting now — at least one, up to `limit` — so a busy
    /// reader handles a burst in one go; empty once closed, or when the calling task is cancelled.
    public func receive(upTo limit: Int) async -> [Received<Inbound>] {
        await wire.receiveUncounted(upTo: limit).map(decode)
    }

    private func decode(_ delivery: WireDelivery) -> Received<Inbound> {
        // Refused (and counted) by the socket thread: oversized.
        if let rejection = delivery.rejection { return .rejected(rejection, from: delivery.peer) }
        switch codec.decode(delivery.frames, as: Inbound.self) {
        case .success(let envelope):
            counters.recordDelivered()
            return .message(envelope, from: delivery.peer)
        case .failure(let rejection):
            counters.recordDropped(rejection.reason)
            return .rejected(rejection, from: delivery.peer)
        }
    }

    /// The next decoded message, skipping rejections; nil once closed or when cancelled.
    public func receiveMessage() async -> (Envelope<Inbound>, WirePeer)? {
        while let received = await receive() {
            if case .message(let envelope, let peer) = received { return (envelope, peer) }
        }
        return nil
    }

    /// Sends `message` to `peer` (see `WireEndpoint.send(_:to:)` for the checks and errors), in
    /// protocol `version` (nil: the newest this build speaks).
    public func send(
        _ message: Outbound, to peer: WirePeer = .upstream, requestID: String? = nil, version: Int? = nil
    ) async throws(WireError) {
        try await wire.send(codec.encode(message, requestID: requestID, version: version), to: peer)
    }

    /// Sends several messages in order with one hand-off to the socket thread; one answer each,
    /// in order (a message that cannot be encoded — in its `version`, nil for the newest — fails alone).
    public func send(all messages: [(message: Outbound, peer: WirePeer, version: Int?)]) async -> [Result<Void, WireError>] {
        var results: [Result<Void, WireError>?] = []
        var encoded: [(frames: [Data], peer: WirePeer)] = []
        for (message, peer, version) in messages {
            do throws(WireError) {
                encoded.append((try codec.encode(message, version: version), peer))
                results.append(nil)
            } catch {
                results.append(.failure(error))
            }
        }
        var sent = await wire.send(all: encoded).makeIterator()
        return results.map { $0 ?? sent.next() ?? .failure(.endpointClosed) }
    }

    /// Sends `message` to the most recent connection of authenticated `key`.
    public func send(_ message: Outbound, toKey key: CurvePublicKey, requestID: String? = nil) async throws(WireError) {
        try await wire.send(codec.encode(message, requestID: requestID), toKey: key)
    }

    /// Ends the live sessions of `key`, sending them `farewell` (e.g. DISCONNECT `revoked`) in
    /// protocol `version` (nil: the newest). See `WireEndpoint.disconnect(key:farewell:)`.
    @discardableResult
    public func disconnect(key: CurvePublicKey, farewell: Outbound? = nil, version: Int? = nil) async -> Int {
        let frames = farewell.flatMap { try? codec.encode($0, version: version) }
        return await wire.disconnect(key: key, farewell: frames)
    }

    /// Closes the endpoint (see `WireEndpoint.close(linger:)`).
    public func close(linger: Duration? = nil) async {
        await wire.close(linger: linger)
    }
}

/// The coordinator's side of the worker protocol (ROUTER).
public typealias CoordinatorWorkerEndpoint = MessageEndpoint<WorkerMessage, CoordinatorMessage>
/// A worker's side of the worker protocol (DEALER).
public typealias WorkerEndpoint = MessageEndpoint<CoordinatorMessage, WorkerMessage>
/// The coordinator's client API endpoint (ROUTER).
public typealias APIServerEndpoint = MessageEndpoint<APIRequest, APIReply>
/// A client of the API (DEALER).
public typealias APIClientEndpoint = MessageEndpoint<APIReply, APIRequest>

extension MessageEndpoint where Inbound == APIReply, Outbound == APIRequest {
    /// Sends `request` with a fresh request id and waits up to `timeout` for the reply carrying
    /// that id (replies to earlier, abandoned requests are skipped). Throws `.timedOut`
    /// (retryable) when none arrives, `.wouldBlock` when the coordinator is not connected.
    public func request(_ request: APIRequest, timeout: Duration = .seconds(10)) async throws(WireError) -> APIReply {
        let id = UUID().uuidString
        try await send(request, requestID: id)
        let reply = await withDeadline(timeout) { () -> APIReply? in
            while let received = await self.receive() {
                if case .message(let envelope, _) = received, envelope.requestID == id { return envelope.message }
            }
            return nil
        }
        guard let reply else {
            throw WireError(
                .timedOut, "no reply from the coordinator within \(timeout)", isRetryable: true)
        }
        return reply
    }
}
