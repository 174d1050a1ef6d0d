internal import CZeroMQ
public import Foundation

/// Z85 text (ZeroMQ RFC 32) for 32-byte CURVE keys, through libzmq's encoder.
enum Z85 {
    static func encode(_ bytes: Data) -> String {
        precondition(bytes.count % 4 == 0, "Z85 encodes multiples of 4 bytes")
        var text = [CChar](repeating: 0, count: bytes.count * 5 / 4 + 1)
        bytes.withUnsafeBytes { raw in
            _ = zmq_z85_encode(&text, raw.bindMemory(to: UInt8.self).baseAddress, raw.count)
        }
        return String(nulTerminated: text)
    }

    /// Decodes Z85 text; nil when the length is not a multiple of 5 or a character is invalid.
    static func decode(_ text: String) -> Data? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count % 5 == 0, utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        var bytes = [UInt8](repeating: 0, count: utf8.count * 4 / 5)
        let ok = text.withCString { zmq_z85_decode(&bytes, $0) != nil }
        return ok ? Data(bytes) : nil
    }
}

/// The 32 raw bytes of a CURVE key, checked once.
private func curveKeyBytes(z85 text: String, what: String) throws(WireError) -> Data {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard trimmed.utf8.count == 40, let bytes = Z85.decode(trimmed), bytes.count == 32 else {
        throw WireError(.invalidKey, "not a CURVE \(what): expected 40 characters of Z85 text")
    }
    return bytes
}

/// A CURVE public key: identifies a worker (or the coordinator) and is safe to share.
/// Its text form is 40 characters of Z85; it encodes in JSON as that text.
public struct CurvePublicKey: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 32 raw key bytes.
    public let bytes: Data

    /// Parses 40 characters of Z85 text (surrounding whitespace is ignored).
    public init(z85 text: String) throws(WireError) {
        bytes = try curveKeyBytes(z85: text, what: "public key")
    }

    /// Wraps 32 raw key bytes.
    public init(bytes: Data) throws(WireError) {
        guard bytes.count == 32 else {
            throw WireError(.invalidKey, "a CURVE public key has 32 bytes, not \(bytes.count)")
        }
        self.bytes = Data(bytes)
    }

    /// The 40-character Z85 text.
    public var z85: String { Z85.encode(bytes) }
    public var description: String { z85 }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try CurvePublicKey(z85: text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(z85)
    }
}

/// A CURVE secret key. Its description is redacted so it never reaches a log by accident.
public struct CurveSecretKey: Hashable, Sendable, CustomStringConvertible {
    /// The 32 raw key bytes.
    public let bytes: Data

    /// Parses 40 characters of Z85 text (surrounding whitespace is ignored).
    public init(z85 text: String) throws(WireError) {
        bytes = try curveKeyBytes(z85: text, what: "secret key")
    }

    /// The 40-character Z85 text. Handle with care.
    public var z85: String { Z85.encode(bytes) }
    public var description: String { "CurveSecretKey(redacted)" }

    /// The public key belonging to this secret key (`zmq_curve_public`).
    public func derivePublicKey() throws(WireError) -> CurvePublicKey {
        var publicText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicText, z85) == 0 else { throw WireError.zmq("zmq_curve_public") }
        return try CurvePublicKey(z85: String(nulTerminated: publicText))
    }
}

/// A CURVE key pair: the coordinator's server keys, or a worker's client keys.
public struct CurveKeyPair: Hashable, Sendable {
    public let publicKey: CurvePublicKey
    public let secretKey: CurveSecretKey

    /// Pairs a secret key with its public key, derived (so the two always match).
    public init(secretKey: CurveSecretKey) throws(WireError) {
        self.publicKey = try secretKey.derivePublicKey()
        self.secretKey = secretKey
    }

    /// Generates a fresh key pair (`zmq_curve_keypair`, libsodium's random source).
    public static func generate() throws(WireError) -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else {
            throw WireError.zmq("zmq_curve_keypair (is libzmq built with CURVE support?)")
        }
        defer { for index in secretText.indices { secretText[index] = 0 } }
        return try CurveKeyPair(secretKey: CurveSecretKey(z85: String(nulTerminated: secretText)))
    }
}
