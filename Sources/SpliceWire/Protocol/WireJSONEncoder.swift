internal import Foundation

/// The JSON writer behind `WireCodec.encode`: the same text Foundation's `JSONEncoder` writes
/// with `[.sortedKeys, .withoutEscapingSlashes]` (the unit tests hold the two byte-equal for every
/// sample message), at a fraction of the cost — the coordinator encodes several messages per
/// segment, and Foundation builds a tree of boxed values for each before writing it.
///
/// It writes bytes as values are encoded; only each keyed container's fields are held until it
/// closes, to be sorted. `JSONValue` (the ASSIGN spec) is written directly. What it does not
/// handle the way `JSONEncoder` would — nested containers asked for by key, super encoders, and
/// the types `JSONEncoder` special-cases (`Date`, `Data`, `URL`, `Decimal`) — makes it give up
/// with `Unsupported`, and `WireCodec` uses `JSONEncoder` for that message instead.
package struct WireJSONEncoder {
    package struct Unsupported: Error {
        package var reason: String
    }

    /// The JSON text of `value`.
    package static func encode(_ value: some Encodable) throws -> [UInt8] {
        let writer = JSONByteWriter()
        try writer.encodeValue(value, codingPath: [])
        if let failure = writer.failure { throw failure }
        return writer.bytes
    }
}

/// The output and the failure, shared by every container of one `encode`.
private final class JSONByteWriter {
    // Only ever touched by the one thread running `WireJSONEncoder.encode`; unchecked, the
    // dynamic exclusivity checks on every append were a fifth of the writer's time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    var failure: (any Error)?

    init() {
        bytes.reserveCapacity(512)
    }

    func give(up reason: String) {
        if failure == nil { failure = WireJSONEncoder.Unsupported(reason: reason) }
    }

    /// Writes one value: scalars and `JSONValue` directly, anything else through its `encode(to:)`.
    func encodeValue<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        // Type identity, not casts: a failed cast to an existential costs a conformance lookup,
        // and most values are structs that match none of these.
        if T.self == String.self {
            writeString(value as! String)
        } else if T.self == Int.self {
            write(String(value as! Int))
        } else if T.self == Int64.self || T.self == Int64.self || T.self == Int32.self || T.self == Int16.self
            || T.self == Int8.self || T.self == UInt.self || T.self == UInt64.self || T.self == UInt32.self
            || T.self == UInt16.self || T.self == UInt8.self
        {
            write("\(value)")
        } else if T.self == Bool.self {
            write((value as! Bool) ? "true" : "false")
        } else if T.self == Double.self {
            writeDouble(value as! Double)
        } else if T.self == JSONValue.self {
            writeJSON(value as! JSONValue)
        } else if T.self == Date.self || T.self == Data.self || T.self == URL.self || T.self == Decimal.self
            || T.self == Float.self
        {
            give(up: "\(T.self) has a JSONEncoder strategy")
        } else {
            let frame = Frame()
            try value.encode(to: ByteEncoder(writer: self, frame: frame, codingPath: codingPath))
            frame.close(into: self)
        }
    }

    func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string: `"` and `\` escaped, control characters as JSONEncoder writes them, `/` not.
    func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            // Most strings need no escaping: copied in one piece.
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 { writeEscaped(byte) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private func writeEscaped(_ byte: UInt8) {
        let escaped: UInt8
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): escaped = byte
        case 0x0A: escaped = UInt8(ascii: "n")
        case 0x0D: escaped = UInt8(ascii: "r")
        case 0x09: escaped = UInt8(ascii: "t")
        case 0x08: escaped = UInt8(ascii: "b")
        case 0x0C: escaped = UInt8(ascii: "f")
        case 0..<0x20:
            let digits = Array("0123456789abcdef".utf8)
            for byte in [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                         digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] { bytes.append(byte) }
            return
        default:
            bytes.append(byte)
            return
        }
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(escaped)
    }

    /// Integral values as integers (as JSONEncoder writes them, and so that `JSONValue` reads
    /// them back as `.integer`); the rest in Swift's shortest round-trip form. Non-finite
    /// numbers are JSONEncoder's to refuse.
    func writeDouble(_ value: Double) {
        guard value.isFinite else { return give(up: "a non-finite number") }
        if value == value.rounded(), abs(value) < 1e15 {
            write(String(Int64(value)))
        } else {
            write("\(value)")
        }
    }

    func writeJSON(_ value: JSONValue) {
        switch value {
        case .null: write("null")
        case .bool(let bool): write(bool ? "true" : "false")
        case .integer(let int): write(String(int))
        case .double(let double): writeDouble(double)
        case .string(let string): writeString(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeJSON(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            for (offset, field) in fields.sorted(by: { $0.key < $1.key }).enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(field.key)
                bytes.append(UInt8(ascii: ":"))
                writeJSON(field.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

/// What one value's `encode(to:)` opened: nothing yet, a keyed container, an unkeyed one, or a
/// single value. Fields are written in place as they come; a keyed container remembers where
/// each is and, when it closes, puts them in key order if they were not (same bytes, same length).
private final class Frame {
    enum Kind { case none, keyed, unkeyed, single }

    // Confined to the encoding thread, like the writer.
    @exclusivity(unchecked) var kind = Kind.none
    /// Each field's `"key":value` text in the output, in the order written.
    @exclusivity(unchecked) var fields: [(key: String, range: Range<Int>)] = []
    @exclusivity(unchecked) var count = 0

    /// Claims the frame for a container of `kind`; a second, different container gives up.
    func open(_ kind: Kind, writer: JSONByteWriter) -> Bool {
        if self.kind == .none {
            self.kind = kind
            switch kind {
            case .keyed: writer.bytes.append(UInt8(ascii: "{"))
            case .unkeyed: writer.bytes.append(UInt8(ascii: "["))
            case .none, .single: break
            }
            return true
        }
        if self.kind == kind && kind != .single { return true }
        writer.give(up: "one value asked for two containers")
        return false
    }

    /// Finishes the value: a keyed container's fields in key order, and its closing bracket. A
    /// value that encoded nothing is `{}`, as JSONEncoder writes it.
    func close(into writer: JSONByteWriter) {
        switch kind {
        case .none:
            writer.write("{}")
        case .keyed:
            sortFields(in: writer)
            writer.bytes.append(UInt8(ascii: "}"))
        case .unkeyed:
            writer.bytes.append(UInt8(ascii: "]"))
        case .single:
            break
        }
    }

    private func sortFields(in writer: JSONByteWriter) {
        guard let first = fields.first, let last = fields.last,
              zip(fields, fields.dropFirst()).contains(where: { $0.key >= $1.key })
        else { return }
        let region = first.range.lowerBound..<last.range.upperBound
        // Stable, so that of a key encoded twice the last one written comes last; that one is
        // kept, as JSONEncoder keeps it.
        let ordered = fields.enumerated().sorted { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) }
        var sorted: [UInt8] = []
        sorted.reserveCapacity(region.count)
        for (position, field) in ordered.enumerated() {
            if position + 1 < ordered.count, ordered[position + 1].element.key == field.element.key { continue }
            if !sorted.isEmpty { sorted.append(UInt8(ascii: ",")) }
            sorted.append(contentsOf: writer.bytes[field.element.range])
        }
        writer.bytes.replaceSubrange(region, with: sorted)
    }

    /// Writes one field (`"key":` and what `body` writes) in place.
    func field(_ key: String, writer: JSONByteWriter, _ body: () throws -> Void) rethrows {
        if !fields.isEmpty { writer.bytes.append(UInt8(ascii: ",")) }
        let start = writer.bytes.count
        writer.writeString(key)
        writer.bytes.append(UInt8(ascii: ":"))
        defer { fields.append((key, start..<writer.bytes.count)) }
        try body()
    }
}

private struct ByteEncoder: Encoder {
    let writer: JSONByteWriter
    let frame: Frame
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        _ = frame.open(.keyed, writer: writer)
        return KeyedEncodingContainer(KeyedByteContainer<Key>(writer: writer, frame: frame, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = frame.open(.unkeyed, writer: writer)
        return UnkeyedByteContainer(writer: writer, frame: frame, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleByteContainer(writer: writer, frame: frame, codingPath: codingPath)
    }
}

private struct KeyedByteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONByteWriter
    let frame: Frame
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        frame.field(key.stringValue, writer: writer) { writer.write("null") }
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try frame.field(key.stringValue, writer: writer) {
            try writer.encodeValue(value, codingPath: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        writer.give(up: "nested containers")
        return KeyedEncodingContainer(KeyedByteContainer<NestedKey>(writer: JSONByteWriter(), frame: Frame(),
                                                                    codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        writer.give(up: "nested containers")
        return UnkeyedByteContainer(writer: JSONByteWriter(), frame: Frame(), codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        writer.give(up: "super encoders")
        return ByteEncoder(writer: JSONByteWriter(), frame: Frame(), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder()
    }
}

private struct UnkeyedByteContainer: UnkeyedEncodingContainer {
    let writer: JSONByteWriter
    let frame: Frame
    let codingPath: [any CodingKey]
    var count: Int { frame.count }

    private func separate() {
        if frame.count > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        frame.count += 1
    }

    mutating func encodeNil() throws {
        separate()
        writer.write("null")
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        separate()
        try writer.encodeValue(value, codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        writer.give(up: "nested containers")
        return KeyedEncodingContainer(KeyedByteContainer<NestedKey>(writer: JSONByteWriter(), frame: Frame(),
                                                                    codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        writer.give(up: "nested containers")
        return UnkeyedByteContainer(writer: JSONByteWriter(), frame: Frame(), codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        writer.give(up: "super encoders")
        return ByteEncoder(writer: JSONByteWriter(), frame: Frame(), codingPath: codingPath)
    }
}

private struct SingleByteContainer: SingleValueEncodingContainer {
    let writer: JSONByteWriter
    let frame: Frame
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws {
        guard frame.open(.single, writer: writer) else { return }
        writer.write("null")
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard frame.open(.single, writer: writer) else { return }
        try writer.encodeValue(value, codingPath: codingPath)
    }
}
