import CLibCrypto

/// HMAC-SHA256 (RFC 2104) with a fixed key, by libcrypto's `HMAC`: S3's request signing (tested
/// against botocore) and the webhooks' `Splice-Signature` (tested against Python's hmac).
public struct HMACSHA256: Sendable {
    private let key: [UInt8]

    public init(key: [UInt8]) {
        self.key = key
    }

    /// The 32-byte MAC of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // A key or message of no bytes still needs a pointer: libcrypto reads a null key as "the
        // key from before", which a one-shot HMAC does not have.
        let keyBytes = key.isEmpty ? [0] : key, messageBytes = message.isEmpty ? [0] : message
        let done = keyBytes.withUnsafeBytes { k in
            messageBytes.withUnsafeBufferPointer { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(key.count), m.baseAddress, message.count, &code, &length)
            }
        }
        guard done != nil, length == 32 else { fatalError("libcrypto could not compute an HMAC-SHA256") }
        return code
    }
}
