/// HMAC-SHA256 (RFC 2104) with a fixed key: S3's request signing (tested against botocore) and the
/// webhooks' `Splice-Signature` (tested against Python's hmac).
public struct HMACSHA256: Sendable {
    private let innerPad: [UInt8]
    private let outerPad: [UInt8]

    public init(key: [UInt8]) {
        var block = key.count > 64 ? SHA256.digest(of: key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        innerPad = block.map { $0 ^ 0x36 }
        outerPad = block.map { $0 ^ 0x5c }
    }

    /// The 32-byte MAC of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        SHA256.digest(of: outerPad + SHA256.digest(of: innerPad + message))
    }
}
