public import Foundation
public import SpliceCore

/// A PostgreSQL type, by its OID; used to tell the server what a bound parameter is.
public struct PostgresType: Hashable, Sendable {
    /// The type's OID in `pg_type`.
    public let oid: UInt32
    public init(oid: UInt32) { self.oid = oid }

    public static let bool = PostgresType(oid: 16)
    public static let bytea = PostgresType(oid: 17)
    public static let int8 = PostgresType(oid: 20)
    public static let int2 = PostgresType(oid: 21)
    public static let int4 = PostgresType(oid: 23)
    public static let text = PostgresType(oid: 25)
    public static let float8 = PostgresType(oid: 701)
    public static let timestamptz = PostgresType(oid: 1184)
    public static let uuid = PostgresType(oid: 2950)
    public static let jsonb = PostgresType(oid: 3802)
    public static let boolArray = PostgresType(oid: 1000)
    public static let int4Array = PostgresType(oid: 1007)
    public static let textArray = PostgresType(oid: 1009)
    public static let int8Array = PostgresType(oid: 1016)
    public static let float8Array = PostgresType(oid: 1022)
    public static let uuidArray = PostgresType(oid: 2951)
    public static let jsonbArray = PostgresType(oid: 3807)
}

/// A Swift value that can be sent as a bind parameter, in PostgreSQL's text format.
public protocol PostgresEncodable: Sendable {
    /// The parameter's type, so the server need not guess.
    static var postgresType: PostgresType { get }
    /// The value in PostgreSQL's text input format; nil means SQL NULL.
    var postgresText: String? { get }
}

/// A Swift value that can be read from a result column, in PostgreSQL's text output format.
public protocol PostgresDecodable: Sendable {
    /// Builds the value from a column's text (`nil` for SQL NULL); throws `PostgresDecodingIssue`.
    static func decode(postgresText text: String?) throws -> Self
}

/// Why a column could not be decoded; the row turns it into a `StoreError` naming the column.
public struct PostgresDecodingIssue: Error, Sendable {
    /// What was wrong with the text.
    public var reason: String
    public init(_ reason: String) { self.reason = reason }

    static let unexpectedNull = PostgresDecodingIssue("unexpected NULL")
}

/// A value that can be an element of a bound array (`= ANY(\(ids))`, `unnest(\(values))`).
public protocol PostgresArrayElement: PostgresEncodable {
    /// The OID of the array type whose elements are `Self`.
    static var postgresArrayType: PostgresType { get }
}

extension PostgresDecodable {
    static func nonNull(_ text: String?) throws -> String {
        guard let text else { throw PostgresDecodingIssue.unexpectedNull }
        return text
    }
}

// MARK: - Strings, integers, booleans

extension String: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    public static var postgresType: PostgresType { .text }
    public static var postgresArrayType: PostgresType { .textArray }
    public var postgresText: String? { self }
    public static func decode(postgresText text: String?) throws -> String { try nonNull(text) }
}

/// Integers share their text form; only the OIDs differ.
protocol PostgresInteger: FixedWidthInteger, PostgresEncodable, PostgresDecodable {}

extension PostgresInteger {
    public var postgresText: String? { String(self) }
    public static func decode(postgresText text: String?) throws -> Self {
        let text = try nonNull(text)
        guard let value = Self(text) else { throw PostgresDecodingIssue("not an integer of this width: \(text)") }
        return value
    }
}

extension Int: PostgresInteger, PostgresArrayElement {
    public static var postgresType: PostgresType { .int8 }
    public static var postgresArrayType: PostgresType { .int8Array }
}

extension Int64: PostgresInteger, PostgresArrayElement {
    public static var postgresType: PostgresType { .int8 }
    public static var postgresArrayType: PostgresType { .int8Array }
}

extension Int32: PostgresInteger, PostgresArrayElement {
    public static var postgresType: PostgresType { .int4 }
    public static var postgresArrayType: PostgresType { .int4Array }
}

extension Bool: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    public static var postgresType: PostgresType { .bool }
    public static var postgresArrayType: PostgresType { .boolArray }
    public var postgresText: String? { self ? "t" : "f" }
    public static func decode(postgresText text: String?) throws -> Bool {
        switch try nonNull(text) {
        case "t", "true": return true
        case "f", "false": return false
        case let other: throw PostgresDecodingIssue("not a boolean: \(other)")
        }
    }
}

/// `double precision`. The text form is Swift's shortest one that reads back to the same value
/// (PostgreSQL's output since version 12 is too); non-finite values travel as PostgreSQL spells
/// them.
extension Double: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    public static var postgresType: PostgresType { .float8 }
    public static var postgresArrayType: PostgresType { .float8Array }
    public var postgresText: String? {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return String(self)
    }
    public static func decode(postgresText text: String?) throws -> Double {
        let text = try nonNull(text)
        guard let value = Double(text) else { throw PostgresDecodingIssue("not a double: \(text)") }
        return value
    }
}

// MARK: - UUID, bytes, JSON

extension UUID: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    public static var postgresType: PostgresType { .uuid }
    public static var postgresArrayType: PostgresType { .uuidArray }
    public var postgresText: String? { uuidString.lowercased() }
    public static func decode(postgresText text: String?) throws -> UUID {
        let text = try nonNull(text)
        guard let uuid = UUID(uuidString: text) else { throw PostgresDecodingIssue("not a UUID: \(text)") }
        return uuid
    }
}

/// Ids travel as `uuid`, in their one text form.
extension PostgresEncodable where Self: UUIDIdentifier {
    public static var postgresType: PostgresType { .uuid }
    public var postgresText: String? { description }
}

extension PostgresArrayElement where Self: UUIDIdentifier {
    public static var postgresArrayType: PostgresType { .uuidArray }
}

extension PostgresDecodable where Self: UUIDIdentifier {
    public static func decode(postgresText text: String?) throws -> Self {
        let text = try nonNull(text)
        guard let id = Self(text) else { throw PostgresDecodingIssue("not a \(Self.noun): \(text)") }
        return id
    }
}

extension JobID: PostgresEncodable, PostgresDecodable, PostgresArrayElement {}
extension LeaseToken: PostgresEncodable, PostgresDecodable, PostgresArrayElement {}

/// A segment's digest travels as its text form (`sha256:` + hex).
extension SHA256Digest: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    public static var postgresType: PostgresType { .text }
    public static var postgresArrayType: PostgresType { .textArray }
    public var postgresText: String? { description }
    public static func decode(postgresText text: String?) throws -> SHA256Digest {
        let text = try nonNull(text)
        guard let digest = SHA256Digest(text) else { throw PostgresDecodingIssue("not a sha256: checksum: \(text)") }
        return digest
    }
}

extension Data: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresType { .bytea }
    /// bytea's hex input form, `\x0a1b…`.
    public var postgresText: String? {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        bytes.reserveCapacity(2 + count * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func decode(postgresText text: String?) throws -> Data {
        let text = try nonNull(text)
        guard text.hasPrefix("\\x") else { throw PostgresDecodingIssue("bytea not in hex format") }
        let hex = Array(text.utf8.dropFirst(2))
        guard hex.count % 2 == 0 else { throw PostgresDecodingIssue("odd bytea hex length") }
        func nibble(_ c: UInt8) throws -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: throw PostgresDecodingIssue("bad bytea hex digit")
            }
        }
        var data = Data(capacity: hex.count / 2)
        var index = 0
        while index < hex.count {
            data.append(try nibble(hex[index]) << 4 | nibble(hex[index + 1]))
            index += 2
        }
        return data
    }
}

/// A JSON document the store keeps without interpreting it (a job's settings, a segment plan).
/// Stored as `jsonb`: the server checks it is JSON and may normalise whitespace and key order.
public struct PostgresJSON: Sendable, Hashable, PostgresEncodable, PostgresDecodable, PostgresArrayElement,
    CustomStringConvertible {
    /// The JSON text.
    public var text: String
    public init(_ text: String) { self.text = text }
    /// Encodes `value` with `JSONEncoder` (sorted keys, so equal values give equal text).
    public init(encoding value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        text = String(decoding: try encoder.encode(value), as: UTF8.self)
    }
    /// Decodes the JSON into `type`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    public static let emptyObject = PostgresJSON("{}")
    public static var postgresType: PostgresType { .jsonb }
    public static var postgresArrayType: PostgresType { .jsonbArray }
    public var postgresText: String? { text }
    public static func decode(postgresText text: String?) throws -> PostgresJSON { PostgresJSON(try nonNull(text)) }
    public var description: String { text }
}

// MARK: - Time

extension Date: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresType { .timestamptz }
    public var postgresText: String? { PostgresTimestamp(self).text }
    public static func decode(postgresText text: String?) throws -> Date {
        try PostgresTimestamp.decode(postgresText: text).date
    }
}

// MARK: - Optionals and arrays

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public var postgresText: String? { self?.postgresText }
}

/// An array of optionals binds with NULL elements (`unnest` of a batch's nullable column).
extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { Wrapped.postgresArrayType }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(postgresText text: String?) throws -> Wrapped? {
        guard let text else { return nil }
        return try Wrapped.decode(postgresText: text)
    }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }
    /// The array literal `{"a","b",NULL}` with every element quoted and `"`/`\` escaped.
    public var postgresText: String? {
        // Byte by byte: these arrays carry every batched write (thousands of elements a second).
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (offset, element) in enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let elementText = element.postgresText else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in elementText.utf8 {
                if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Array: PostgresDecodable where Element: PostgresDecodable {
    /// Parses a one-dimensional array's text form (quoted and unquoted elements, NULL).
    public static func decode(postgresText text: String?) throws -> [Element] {
        let text = try nonNull(text)
        let bytes = Array<UInt8>(text.utf8)
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}"), bytes.count >= 2 else {
            throw PostgresDecodingIssue("not an array: \(text)")
        }
        var elements: [Element] = []
        var current: [UInt8] = []
        var quoted = false
        var inQuotes = false
        func finish() throws {
            let isNull = !quoted && current.elementsEqual("NULL".utf8)
            elements.append(try Element.decode(postgresText: isNull ? nil : String(decoding: current, as: UTF8.self)))
            current.removeAll(keepingCapacity: true)
            quoted = false
        }
        var index = 1
        let end = bytes.count - 1
        // Multi-byte UTF-8 sequences never contain these ASCII bytes, so they pass through whole.
        while index < end {
            let byte = bytes[index]
            index += 1
            if inQuotes {
                switch byte {
                case UInt8(ascii: "\\"):
                    if index < end { current.append(bytes[index]); index += 1 }
                case UInt8(ascii: "\""): inQuotes = false
                default: current.append(byte)
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inQuotes = true; quoted = true
                case UInt8(ascii: ","): try finish()
                default: current.append(byte)
                }
            }
        }
        if end > 1 { try finish() }
        return elements
    }
}
