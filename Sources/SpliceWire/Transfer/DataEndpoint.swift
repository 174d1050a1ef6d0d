public import Foundation

/// What a `DataEndpoint` received: a message (with a `CHUNK`'s payload), or a rejection, already
/// counted, that the caller may log.
public enum DataReceived: Sendable {
    case message(DataMessage, payload: Data?, from: WirePeer)
    case rejected(WireRejection, from: WirePeer)
}

/// A `WireEndpoint` speaking `splice-data` 1. Decoding is total, as on the other endpoints: a
/// message that is not a valid envelope, a `CHUNK` without its payload frame or whose payload is
/// not the length its header says, a second frame on anything but a `CHUNK`, are rejections
/// (counted, never a crash).
public final class DataEndpoint: Sendable {
    /// The underlying socket endpoint.
    public let wire: WireEndpoint
    private let codec: WireCodec

    public init(_ wire: WireEndpoint) {
        self.wire = wire
        codec = WireCodec(maxMessageBytes: wire.options.maxMessageBytes)
    }

    /// Received / delivered / dropped counts (shared with `wire`).
    public var counters: WireCounters { wire.counters }

    /// The messages waiting now, at least one, up to `limit`; empty once closed or when the
    /// calling task is cancelled.
    public func receive(upTo limit: Int = 64) async -> [DataReceived] {
        await wire.receiveUncounted(upTo: limit).map { delivery in
            // Refused (and counted) by the socket thread: oversized.
            if let rejection = delivery.rejection { return .rejected(rejection, from: delivery.peer) }
            switch decode(delivery.frames) {
            case .success(let (message, payload)):
                counters.recordDelivered()
                return .message(message, payload: payload, from: delivery.peer)
            case .failure(let rejection):
                counters.recordDropped(rejection.reason)
                return .rejected(rejection, from: delivery.peer)
            }
        }
    }

    /// The message in `frames` (and a `CHUNK`'s payload), or why it was rejected.
    public func decode(_ frames: [Data]) -> Result<(DataMessage, Data?), WireRejection> {
        guard let first = frames.first else { return .failure(WireRejection(.missingFrames, "empty message")) }
        guard frames.count <= 2 else {
            return .failure(WireRejection(.tooManyFrames, "\(frames.count) frames; a data message has at most two"))
        }
        switch codec.decode([first], as: DataMessage.self) {
        case .failure(let rejection):
            return .failure(rejection)
        case .success(let envelope):
            if case .chunk(let chunk) = envelope.message {
                guard frames.count == 2 else { return .failure(WireRejection(.missingFrames, "a CHUNK without its payload")) }
                guard frames[1].count == chunk.length else {
                    return .failure(WireRejection(.invalidBody, "CHUNK: the payload is \(frames[1].count) bytes, the header "
                                                  + "says \(chunk.length)"))
                }
                return .success((envelope.message, frames[1]))
            }
            guard frames.count == 1 else {
                return .failure(WireRejection(.tooManyFrames, "2 frames; only a CHUNK carries a payload"))
            }
            return .success((envelope.message, nil))
        }
    }

    /// Sends `message` (with `payload` as the second frame of a `CHUNK`) to `peer`.
    public func send(_ message: DataMessage, payload: Data? = nil, to peer: WirePeer = .upstream) async throws(WireError) {
        var frames = try codec.encode(message)
        if let payload { frames.append(payload) }
        try await wire.send(frames, to: peer)
    }

    /// Closes the endpoint (see `WireEndpoint.close(linger:)`).
    public func close(linger: Duration? = nil) async {
        await wire.close(linger: linger)
    }
}
