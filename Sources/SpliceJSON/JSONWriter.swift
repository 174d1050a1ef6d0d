internal import Foundation
internal import SpliceCore
internal import Synchronization

/// The writer behind `JSON.encode`: the same text Foundation's `JSONEncoder` writes with
/// `[.sortedKeys, .withoutEscapingSlashes]` and its default strategies (the tests hold the two
/// byte-equal), at a fraction of the cost — the coordinator encodes several messages per
/// segment, and Foundation builds a tree of boxed values for each before writing it.
///
/// It writes bytes as values are encoded; only each keyed container's fields are remembered
/// until it closes, to be put in key order. A `JSONValue` is written directly and a
/// `JSONPayload` made from a value embeds its text as it is.
///
/// Writers are reused, with their buffers and frames: a message's encode would otherwise spend a
/// quarter of its time allocating and freeing them.
enum JSONWriter {
    static func write(_ value: some Encodable) throws(JSONError) -> [UInt8] {
        let writer = idle.withLock { $0.popLast() } ?? JSONByteWriter()
        defer {
            writer.reset()
            idle.withLock { if $0.count < 8 { $0.append(writer) } }
        }
        do {
            try writer.encodeValue(value, codingPath: [])
        } catch let error as JSONError {
            throw error
        } catch {
            throw JSONError(.unencodable, "cannot encode \(type(of: value)) as JSON: \(error)")
        }
        if let failure = writer.failure { throw failure }
        return Array(writer.bytes)
    }

    /// Writers not in use.
    private static let idle = Mutex<[JSONByteWriter]>([])
}

/// The output and the first failure, shared by every container of one `write`. Used by one
/// thread at a time: taken from `JSONWriter`'s idle writers for one `write`, then put back.
private final class JSONByteWriter: @unchecked Sendable {
    // Only ever touched by the one thread running `JSONWriter.write`; unchecked, the dynamic
    // exclusivity checks on every append were a fifth of the writer's time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Reused by every keyed container that puts its fields in order.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    @exclusivity(unchecked) var order: [Int] = []
    /// Frames finished with, to be used again.
    @exclusivity(unchecked) var spareFrames: [Frame] = []
    var failure: JSONError?

    init() {
        bytes.reserveCapacity(512)
    }

    /// Ready for the next `write`, keeping the buffers' capacity.
    func reset() {
        bytes.removeAll(keepingCapacity: true)
        failure = nil
    }

    /// A frame for one value, fresh or used again.
    func takeFrame() -> Frame {
        spareFrames.popLast() ?? Frame()
    }

    /// A frame whose value is written: a container of it still held elsewhere can no longer write
    /// through it (its generation moved on).
    func recycle(_ frame: Frame) {
        frame.reuse()
        if spareFrames.count < 32 { spareFrames.append(frame) }
    }

    func fail(_ reason: String) {
        if failure == nil { failure = JSONError(.unencodable, reason) }
    }

    /// Writes one value: scalars, `JSONValue` and `JSONPayload` directly, the types `JSONEncoder`
    /// special-cases as it does, anything else through its `encode(to:)`.
    func encodeValue<T: Encodable>(_ value: T, codingPath: @autoclosure () -> [any CodingKey]) throws {
        // Type identity, not casts: a failed cast to an existential costs a conformance lookup,
        // and most values are structs that match none of these.
        if T.self == String.self {
            writeString(value as! String)
        } else if T.self == Int.self {
            write(String(value as! Int))
        } else if T.self == Int64.self {
            write(String(value as! Int64))
        } else if T.self == Int32.self {
            write(String(value as! Int32))
        } else if T.self == Int16.self || T.self == Int8.self || T.self == UInt.self || T.self == UInt64.self
            || T.self == UInt32.self || T.self == UInt16.self || T.self == UInt8.self
        {
            write("\(value)")
        } else if T.self == JobID.self {
            // The vocabulary's ids and digest are strings, several per message: written as such,
            // without a container (their `encode(to:)` writes the same).
            writeString((value as! JobID).description)
        } else if T.self == LeaseToken.self {
            writeString((value as! LeaseToken).description)
        } else if T.self == SHA256Digest.self {
            writeString((value as! SHA256Digest).description)
        } else if T.self == Bool.self {
            write((value as! Bool) ? "true" : "false")
        } else if T.self == Double.self {
            writeDouble(value as! Double)
        } else if T.self == Float.self {
            let float = value as! Float
            guard float.isFinite else { return fail("\(float) has no JSON form") }
            writeDouble(Double(float), shortest: "\(float)")
        } else if T.self == JSONValue.self {
            writeJSON(value as! JSONValue)
        } else if T.self == JSONPayload.self {
            switch (value as! JSONPayload).storage {
            case .text(let text): bytes.append(contentsOf: text)
            case .node(let node): writeNode(node)
            }
        } else if T.self == URL.self {
            writeString((value as! URL).absoluteString)
        } else if T.self == Data.self {
            writeString((value as! Data).base64EncodedString())
        } else if T.self == Decimal.self {
            fail("Decimal has no JSON form here; encode it as a Double or a string")
        } else {
            let frame = takeFrame()
            try value.encode(to: ByteEncoder(writer: self, frame: frame, codingPath: codingPath()))
            frame.close(into: self)
            recycle(frame)
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
    /// them back as `.integer`); the rest in Swift's shortest round-trip form. A non-finite
    /// number has no JSON form.
    func writeDouble(_ value: Double, shortest: String? = nil) {
        guard value.isFinite else { return fail("\(value) has no JSON form") }
        if value == value.rounded(), abs(value) < 1e15 {
            write(String(Int64(value)))
        } else {
            write(shortest ?? "\(value)")
        }
    }

    /// A parsed document, keys sorted, a repeated key's first value only.
    func writeNode(_ node: JSONNode) {
        switch node {
        case .null: write("null")
        case .bool(let bool): write(bool ? "true" : "false")
        case .integer(let int): write(String(int))
        case .double(let double): writeDouble(double)
        case .string(let string): writeString(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeNode(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            var previous: String?
            for field in fields.enumerated().sorted(by: { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) })
            where field.element.key != previous {
                if previous != nil { bytes.append(UInt8(ascii: ",")) }
                previous = field.element.key
                writeString(field.element.key)
                bytes.append(UInt8(ascii: ":"))
                writeNode(field.element.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// A tree, as its document: keys sorted.
    func writeJSON(_ value: JSONValue) {
        writeNode(JSONNode(value))
    }
}

/// What one value's `encode(to:)` opened: nothing yet, a keyed container, an unkeyed one, or a
/// single value. Fields are written in place as they come; a keyed container remembers where
/// each is and, when it closes, puts them in key order if they were not (same bytes, same length).
/// A nested container is a frame of its own, open until its parent writes its next field or
/// closes; writing to it after that is refused.
private final class Frame {
    enum Kind { case none, keyed, unkeyed, single }

    // Confined to the encoding thread, like the writer.
    @exclusivity(unchecked) var kind = Kind.none
    /// Each field's `"key":value` text in the output, in the order written.
    @exclusivity(unchecked) var fields: [(key: String, range: Range<Int>)] = []
    @exclusivity(unchecked) var count = 0
    /// A nested container still being written: the field (or element) it is the value of.
    @exclusivity(unchecked) var child: (frame: Frame, key: String?, start: Int)?
    @exclusivity(unchecked) var closed = false
    /// Moves on every time the frame is used again, so a container of an earlier value that is
    /// still held somewhere cannot write into a later one.
    @exclusivity(unchecked) var generation: UInt64 = 0

    /// Empties the frame for its next value (its field list keeps its capacity).
    func reuse() {
        generation &+= 1
        kind = .none
        fields.removeAll(keepingCapacity: true)
        count = 0
        child = nil
        closed = false
    }

    /// Whether a container made at `generation` may still write.
    func current(_ generation: UInt64, _ writer: JSONByteWriter) -> Bool {
        if generation == self.generation { return true }
        writer.fail("a container was written to after its value was encoded")
        return false
    }

    /// Claims the frame for a container of `kind`; a second, different container fails.
    func open(_ kind: Kind, writer: JSONByteWriter) -> Bool {
        guard !closed else {
            writer.fail("a container was written to after its parent moved on")
            return false
        }
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
        writer.fail("one value asked for two containers")
        return false
    }

    /// Whether the frame may still be written to; finishes a nested container first.
    func writable(_ writer: JSONByteWriter) -> Bool {
        finishChild(writer)
        if closed { writer.fail("a container was written to after its parent moved on") }
        return !closed
    }

    /// Finishes the value: a keyed container's fields in key order, and its closing bracket. A
    /// value that encoded nothing is `{}`, as JSONEncoder writes it.
    func close(into writer: JSONByteWriter) {
        finishChild(writer)
        guard !closed else { return }
        closed = true
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

    /// Opens a nested container as the value of `key` (nil: the next element).
    func nest(_ kind: Kind, key: String?, writer: JSONByteWriter) -> Frame {
        let nested = writer.takeFrame()
        guard writable(writer) else {
            nested.closed = true
            return nested
        }
        let start: Int
        if let key {
            if !fields.isEmpty { writer.bytes.append(UInt8(ascii: ",")) }
            start = writer.bytes.count
            writer.writeString(key)
            writer.bytes.append(UInt8(ascii: ":"))
        } else {
            separate(writer)
            start = writer.bytes.count
        }
        _ = nested.open(kind, writer: writer)
        child = (nested, key, start)
        return nested
    }

    private func finishChild(_ writer: JSONByteWriter) {
        guard let (nested, key, start) = child else { return }
        child = nil
        nested.close(into: writer)
        writer.recycle(nested)
        if let key { fields.append((key, start..<writer.bytes.count)) }
    }

    private func sortFields(in writer: JSONByteWriter) {
        guard let first = fields.first, let last = fields.last,
              zip(fields, fields.dropFirst()).contains(where: { $0.key >= $1.key })
        else { return }
        let region = first.range.lowerBound..<last.range.upperBound
        // An insertion sort of the field indices (a handful of fields), stable, so that of a key
        // encoded twice the last one written comes last; that one is kept, as JSONEncoder keeps it.
        writer.order.removeAll(keepingCapacity: true)
        for index in fields.indices {
            var position = writer.order.count
            while position > 0, fields[writer.order[position - 1]].key > fields[index].key { position -= 1 }
            writer.order.insert(index, at: position)
        }
        writer.scratch.removeAll(keepingCapacity: true)
        for (position, index) in writer.order.enumerated() {
            if position + 1 < writer.order.count, fields[writer.order[position + 1]].key == fields[index].key { continue }
            if !writer.scratch.isEmpty { writer.scratch.append(UInt8(ascii: ",")) }
            writer.scratch.append(contentsOf: writer.bytes[fields[index].range])
        }
        // The same bytes in another order, and no longer when a repeated key was dropped.
        writer.bytes.replaceSubrange(region, with: writer.scratch)
    }

    /// Writes one field (`"key":` and what `body` writes) in place.
    func field(_ key: String, writer: JSONByteWriter, _ body: () throws -> Void) rethrows {
        guard writable(writer) else { return }
        if fields.isEmpty {
            fields.reserveCapacity(12)  // one allocation for a struct's fields, not one per doubling
        } else {
            writer.bytes.append(UInt8(ascii: ","))
        }
        let start = writer.bytes.count
        writer.writeString(key)
        writer.bytes.append(UInt8(ascii: ":"))
        defer { fields.append((key, start..<writer.bytes.count)) }
        try body()
    }

    /// The comma before an element of an unkeyed container.
    func separate(_ writer: JSONByteWriter) {
        if count > 0 { writer.bytes.append(UInt8(ascii: ",")) }
        count += 1
    }
}

private struct ByteEncoder: Encoder {
    let writer: JSONByteWriter
    let frame: Frame
    /// The frame's generation when this value began (see `Frame.current`).
    let generation: UInt64
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: JSONByteWriter, frame: Frame, codingPath: [any CodingKey]) {
        self.writer = writer
        self.frame = frame
        self.generation = frame.generation
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if frame.current(generation, writer) { _ = frame.open(.keyed, writer: writer) }
        return KeyedEncodingContainer(KeyedByteContainer<Key>(writer: writer, frame: frame, generation: generation,
                                                              codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if frame.current(generation, writer) { _ = frame.open(.unkeyed, writer: writer) }
        return UnkeyedByteContainer(writer: writer, frame: frame, generation: generation, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleByteContainer(writer: writer, frame: frame, generation: generation, codingPath: codingPath)
    }
}

/// A container that writes nothing: what a refused request (a super encoder) or a container used
/// after its value was encoded gets, once the failure is recorded.
private func detachedEncoder(_ codingPath: [any CodingKey]) -> ByteEncoder {
    ByteEncoder(writer: JSONByteWriter(), frame: Frame(), codingPath: codingPath)
}

private struct KeyedByteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONByteWriter
    let frame: Frame
    let generation: UInt64
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        guard frame.current(generation, writer) else { return }
        frame.field(key.stringValue, writer: writer) { writer.write("null") }
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard frame.current(generation, writer) else { return }
        try frame.field(key.stringValue, writer: writer) {
            try writer.encodeValue(value, codingPath: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = frame.current(generation, writer) ? frame.nest(.keyed, key: key.stringValue, writer: writer) : Frame()
        return KeyedEncodingContainer(KeyedByteContainer<NestedKey>(
            writer: writer, frame: nested, generation: nested.generation, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = frame.current(generation, writer) ? frame.nest(.unkeyed, key: key.stringValue, writer: writer) : Frame()
        return UnkeyedByteContainer(writer: writer, frame: nested, generation: nested.generation,
                                    codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        writer.fail("super encoders have no JSON form here")
        return detachedEncoder(codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder()
    }
}

private struct UnkeyedByteContainer: UnkeyedEncodingContainer {
    let writer: JSONByteWriter
    let frame: Frame
    let generation: UInt64
    let codingPath: [any CodingKey]
    var count: Int { frame.count }

    mutating func encodeNil() throws {
        guard frame.current(generation, writer), frame.writable(writer) else { return }
        frame.separate(writer)
        writer.write("null")
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard frame.current(generation, writer), frame.writable(writer) else { return }
        frame.separate(writer)
        try writer.encodeValue(value, codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = frame.current(generation, writer) ? frame.nest(.keyed, key: nil, writer: writer) : Frame()
        return KeyedEncodingContainer(KeyedByteContainer<NestedKey>(
            writer: writer, frame: nested, generation: nested.generation, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = frame.current(generation, writer) ? frame.nest(.unkeyed, key: nil, writer: writer) : Frame()
        return UnkeyedByteContainer(writer: writer, frame: nested, generation: nested.generation, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        writer.fail("super encoders have no JSON form here")
        return detachedEncoder(codingPath)
    }
}

private struct SingleByteContainer: SingleValueEncodingContainer {
    let writer: JSONByteWriter
    let frame: Frame
    let generation: UInt64
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws {
        guard frame.current(generation, writer), frame.open(.single, writer: writer) else { return }
        writer.write("null")
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        guard frame.current(generation, writer), frame.open(.single, writer: writer) else { return }
        try writer.encodeValue(value, codingPath: codingPath)
    }
}
