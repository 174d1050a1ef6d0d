public import Foundation

/// An identifier that is a UUID, written everywhere as the UUID's lowercase text: in JSON (a plain
/// string), in the database (`uuid`), in logs and on the command line. It is parsed once, where it
/// enters (a message decoded, an argument read, a row read); text that is not a UUID is refused
/// there, so nothing deeper ever holds an id that cannot exist.
public protocol UUIDIdentifier: Hashable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// What the id names, for messages ("job id").
    static var noun: String { get }
    var uuid: UUID { get }
    init(_ uuid: UUID)
}

extension UUIDIdentifier {
    /// Parses the text form (any case); nil when it is not a UUID.
    public init?(_ text: String) {
        guard let uuid = UUID(text: text) else { return nil }
        self.init(uuid)
    }

    /// The lowercase text form.
    public var description: String { uuid.lowercaseText }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = Self(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not a \(Self.noun): \(text.prefix(64))")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// A job's id (the store creates it).
public struct JobID: UUIDIdentifier {
    public static let noun = "job id"
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
}

/// The fencing token of one lease: fresh for every attempt (the store draws it), so a late message
/// from an earlier attempt is recognisably stale.
public struct LeaseToken: UUIDIdentifier {
    public static let noun = "lease token"
    public let uuid: UUID
    public init(_ uuid: UUID) { self.uuid = uuid }
}

extension UUID {
    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in either case, without going through
    /// `UUID(uuidString:)` (which scans with `sscanf`; ids are read several times per segment on
    /// the coordinator's hot path).
    init?(text: String) {
        var text = text
        let parsed: uuid_t? = text.withUTF8 { utf8 -> uuid_t? in
            guard utf8.count == 36 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let complete = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var index = 0
                for position in 0..<16 {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        guard utf8[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                    }
                    guard let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) else { return false }
                    out[position] = high << 4 | low
                    index += 2
                }
                return true
            }
            return complete ? bytes : nil
        }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    /// The lowercase text form, written without going through `uuidString` (ids are written
    /// several times per segment on the coordinator's hot path).
    var lowercaseText: String {
        let digits = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        text[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    text[index] = digits[Int(byte >> 4)]
                    text[index + 1] = digits[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }
}

/// The value of one hex digit (either case).
func hexValue(_ digit: UInt8) -> UInt8? {
    switch digit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
    default: nil
    }
}
