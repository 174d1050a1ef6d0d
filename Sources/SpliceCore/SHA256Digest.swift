/// The SHA-256 digest of a segment file, with one text form, `sha256:` followed by 64 lowercase
/// hex digits: what the worker reports in COMPLETE, what the store records, what the stitcher
/// checks each file against. Text that is not that form is refused where it is parsed.
public struct SHA256Digest: Hashable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// The digest of these 32 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses `sha256:` + 64 hex digits (either case); nil for anything else.
    public init?(_ text: String) {
        let prefix = "sha256:"
        guard text.hasPrefix(prefix) else { return nil }
        let hex = Array(text.utf8.dropFirst(prefix.utf8.count))
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = hexValue(hex[index]), let low = hexValue(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// `sha256:` + 64 lowercase hex digits.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = Array("sha256:".utf8)
        text.reserveCapacity(7 + 64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let digest = Self(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not a checksum (sha256: and 64 hex digits): \(text.prefix(80))")
        }
        self = digest
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
