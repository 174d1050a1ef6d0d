extension JSONValue {
    /// Parses JSON text (RFC 8259) into a `JSONValue`.
    ///
    /// Numbers: a value that is an exact `Int64` is `.integer` (`2`, `2.0`, `1e3`), any other is
    /// `.double`; a repeated key keeps its first value — what decoding through `JSONDecoder` gives.
    public init(parsing text: some Collection<UInt8>) throws(JSONError) {
        self = JSONValue(try JSONNode(parsing: text))
    }

    /// Parses JSON text whose arrays and objects nest at most `maxDepth` deep (what a server
    /// takes from a client: deeper documents are refused as `notJSON`, naming the depth).
    public init(parsing text: some Collection<UInt8>, maxDepth: Int) throws(JSONError) {
        self = JSONValue(try JSONNode(parsing: text, maxDepth: maxDepth))
    }
}

extension JSONNode {
    /// Parses JSON text (RFC 8259) into the form decoding reads.
    init(parsing text: some Collection<UInt8>, maxDepth: Int = JSONParser.maxDepth) throws(JSONError) {
        var parser = JSONParser(bytes: Array(text), maxDepth: min(maxDepth, JSONParser.maxDepth))
        do {
            self = try parser.document()
        } catch {
            throw JSONError(.notJSON, "not JSON: \(error.reason) at byte \(error.offset)")
        }
    }
}

/// A recursive-descent parser over the bytes of one document.
struct JSONParser {
    struct Failure: Error {
        var reason: String
        var offset: Int
    }

    let bytes: [UInt8]
    var index = 0
    /// Nesting limit, so hostile input cannot overflow the stack.
    static let maxDepth = 512
    /// This parse's limit (at most ``maxDepth``).
    let depthLimit: Int

    init(bytes: [UInt8], maxDepth: Int = JSONParser.maxDepth) {
        self.bytes = bytes
        depthLimit = maxDepth
    }

    mutating func document() throws(Failure) -> JSONNode {
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("trailing characters") }
        return value
    }

    private func fail(_ reason: String) -> Failure {
        Failure(reason: reason, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONNode {
        guard depth < depthLimit else { throw fail("nested deeper than \(depthLimit)") }
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONNode {
        index += 1
        var fields: [JSONField] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            // In document order: a repeated key keeps its first value when looked up.
            fields.append(JSONField(key: key, value: try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(fields)
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONNode {
        index += 1
        var elements: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws(Failure) -> String {
        index += 1  // the opening quote
        let start = index
        // Fast path: no escapes, copied in one piece.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return try validated(bytes[start..<index])
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in a string") }
            index += 1
        }
        var decoded = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try validated(decoded[...])
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"): decoded.append(contentsOf: try unicodeEscape())
                default: throw fail("invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("control character in a string") }
                decoded.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// The string of these bytes; invalid UTF-8 is refused. ASCII (almost every string of the
    /// protocol) skips the generic validation, which cost more than the rest of parsing.
    private func validated(_ utf8: ArraySlice<UInt8>) throws(Failure) -> String {
        if !utf8.contains(where: { $0 >= 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        guard let string = String(validating: utf8, as: UTF8.self) else { throw fail("invalid UTF-8") }
        return string
    }

    /// The code point of `\uXXXX` (after the `u`), joining a surrogate pair, as UTF-8.
    private mutating func unicodeEscape() throws(Failure) -> [UInt8] {
        var scalar = try hex4()
        if (0xD800..<0xDC00).contains(scalar) {
            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail("unpaired surrogate") }
            index += 2
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..<0xE000).contains(scalar) {
            throw fail("unpaired surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
        return Array(String(Character(unicode)).utf8)
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(Failure) -> JSONNode {
        let start = index
        var integral = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("invalid number")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard skipDigits() else { throw fail("invalid number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() else { throw fail("invalid number") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
        // `2.0`, `1e3` and `-0.0` are integers to JSONDecoder too.
        if let exact = Int64(exactly: value) { return .integer(exact) }
        return .double(value)
    }

    /// Skips digits; whether there was at least one.
    @discardableResult
    private mutating func skipDigits() -> Bool {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index > start
    }
}
