public import Foundation
internal import SpliceJSON

/// Encodes messages into frames and decodes frames into messages, totally: `decode` never
/// throws or traps, it returns a `WireRejection` for anything it cannot accept.
///
/// The wire form of a message is exactly one frame holding the JSON envelope (after the routing
/// id, which the ROUTER endpoint strips).
public struct WireCodec: Sendable {
    /// The largest envelope accepted or produced, in bytes.
    public var maxMessageBytes: Int

    public init(maxMessageBytes: Int = WireOptions().maxMessageBytes) {
        self.maxMessageBytes = maxMessageBytes
    }

    // MARK: - Encoding

    /// The frames for `message`, with an optional request id in the envelope.
    public func encode<M: WireMessage>(_ message: M, requestID: String? = nil) throws(WireError) -> [Data] {
        let data: Data
        do {
            data = Data(try JSON.encode(EncodingBox(message: message, requestID: requestID)))
        } catch {
            throw WireError(.encoding, "cannot encode \(type(of: message.body).messageType): \(error)")
        }
        guard data.count <= maxMessageBytes else {
            throw WireError(
                .messageTooLarge, "\(type(of: message.body).messageType) is \(data.count) bytes, over the \(maxMessageBytes)-byte limit")
        }
        return [data]
    }

    // MARK: - Decoding

    /// The message in `frames`, or why it was rejected.
    public func decode<M: WireMessage>(_ frames: [Data], as _: M.Type = M.self) -> Result<Envelope<M>, WireRejection> {
        guard let frame = frames.first else { return .failure(WireRejection(.missingFrames, "empty message")) }
        guard frames.count == 1 else {
            return .failure(WireRejection(.tooManyFrames, "\(frames.count) frames; the envelope is one frame"))
        }
        guard frame.count <= maxMessageBytes else {
            return .failure(WireRejection(.oversized, "\(frame.count) bytes, over the \(maxMessageBytes)-byte limit",
                                          requestID: RequestIDScan.requestID(in: frame)))
        }
        do {
            let box = try JSON.decode(DecodingBox<M>.self, from: frame)
            return .success(Envelope(box.message, requestID: box.requestID))
        } catch let rejection as WireRejection {
            return .failure(rejection)
        } catch {
            return .failure(WireRejection(.garbled, "not a JSON envelope"))
        }
    }
}

private struct EncodingBox<M: WireMessage>: Encodable {
    let message: M
    let requestID: String?

    func encode(to encoder: any Encoder) throws {
        // In key order, which is the order on the wire (it spares the writer a reordering).
        var container = encoder.container(keyedBy: EnvelopeKey.self)
        try container.encode(message.body, forKey: .body)
        try container.encodeIfPresent(requestID, forKey: .id)
        try container.encode(M.protocolName, forKey: .protocol)
        try container.encode(type(of: message.body).messageType, forKey: .type)
        try container.encode(M.protocolVersion, forKey: .version)
    }
}

/// Checks the envelope field by field so each failure gets its own rejection reason. The request
/// id is read first, so every later rejection carries it (a client API endpoint answers it).
private struct DecodingBox<M: WireMessage>: Decodable {
    let message: M
    let requestID: String?

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<EnvelopeKey>
        do {
            container = try decoder.container(keyedBy: EnvelopeKey.self)
        } catch {
            throw WireRejection(.garbled, "the message is not a JSON object")
        }
        // `null` is the same as absent (docs/protocol.md, Encoding rules).
        let requestID: String?
        do {
            requestID = try container.decodeIfPresent(String.self, forKey: .id)
        } catch {
            throw WireRejection(.invalidBody, "the request id `id` is not a string")
        }
        self.requestID = requestID
        let reject = { (reason: WireRejection.Reason, detail: String) in
            WireRejection(reason, detail, requestID: requestID)
        }
        guard let name = try? container.decode(String.self, forKey: .protocol) else {
            throw reject(.garbled, "no `protocol` name")
        }
        guard name == M.protocolName else {
            throw reject(.wrongProtocol, "`protocol` is \(name.prefix(64)), expected \(M.protocolName)")
        }
        guard let version = try? container.decode(Int.self, forKey: .version) else {
            throw reject(.garbled, "no `version` number")
        }
        guard version == M.protocolVersion else {
            throw reject(.unsupportedVersion,
                         "`version` is \(version); this build speaks \(M.protocolName) \(M.protocolVersion)")
        }
        guard let type = try? container.decode(String.self, forKey: .type) else {
            throw reject(.garbled, "no `type`")
        }
        guard let entry = M.catalogue.entries[type] else {
            throw reject(.unknownType, "`type` \(type.prefix(64)) is not one of "
                         + M.catalogue.messageTypes.joined(separator: ", "))
        }
        do {
            message = try entry.decode(container)
        } catch let rejection as WireRejection {
            throw reject(rejection.reason, rejection.detail)
        } catch {
            throw reject(.invalidBody, "\(type): \(DecodingFailure.describe(error))")
        }
    }
}
