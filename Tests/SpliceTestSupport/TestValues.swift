import Foundation
public import SpliceCore

// Fixed ids and digests for tests: real values of their types (nothing here parses test text
// into an id that could not exist), easy to tell apart in a failure.

extension JobID {
    /// `00000000-0000-4000-8000-00000000000n`: the same id for the same number.
    public static func numbered(_ number: Int) -> JobID { JobID(UUID.numbered(number, kind: 0x10)) }
}

extension LeaseToken {
    /// `00000000-0000-4000-8000-00000000000n` (another family than job ids).
    public static func numbered(_ number: Int) -> LeaseToken { LeaseToken(UUID.numbered(number, kind: 0x7E)) }
}

extension SHA256Digest {
    /// Thirty-two `byte`s: `sha256:abab…` for 0xAB.
    public static func filled(_ byte: UInt8) -> SHA256Digest { SHA256Digest(bytes: [UInt8](repeating: byte, count: 32))! }
}

extension UUID {
    /// A version-4-shaped UUID whose first byte is `kind` and whose last eight hold `number`.
    fileprivate static func numbered(_ number: Int, kind: UInt8) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = kind
        bytes[6] = 0x40
        bytes[8] = 0x80
        withUnsafeBytes(of: UInt64(truncatingIfNeeded: number).bigEndian) { bytes.replaceSubrange(8..<16, with: $0) }
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                           bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
