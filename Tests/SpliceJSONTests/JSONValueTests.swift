import Foundation
import SpliceJSON
import Testing

@Suite("JSONValue: any JSON as a tree")
struct JSONValueTests {
    @Test("every kind of value survives a round trip, integers exactly")
    func roundTrip() throws {
        let value: JSONValue = .array([
            .null, .bool(false), .bool(true), .integer(Int64.max), .integer(Int64.min), .integer(0),
            .double(0.1), .double(-2.5e-10), .string("ünïcödé \"quoted\" / slash"),
            .object(["nested": .array([.integer(1)])]),
        ])
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }

    @Test("booleans stay booleans, numbers stay numbers")
    func types() throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(#"[true, 1, 1.5, "1"]"#.utf8))
        #expect(decoded == .array([.bool(true), .integer(1), .double(1.5), .string("1")]))
    }

    @Test("an integral double comes back as an integer and still decodes as a Double")
    func integralDouble() throws {
        struct Rate: Codable, Equatable { var fps: Double }
        let value = try JSONValue(encoding: Rate(fps: 25))
        #expect(value == .object(["fps": .integer(25)]))
        #expect(try value.decode(Rate.self) == Rate(fps: 25))
    }

    @Test("decoding into the wrong type throws")
    func wrongType() throws {
        struct Needs: Decodable { var count: Int }
        #expect(throws: (any Error).self) { try JSONValue.object(["count": .string("x")]).decode(Needs.self) }
    }
}

@Suite("JSONValue(parsing:) reads what JSONDecoder reads")
struct JSONValueParserTests {
    private func viaFoundation(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test("the same value as decoding through JSONDecoder", arguments: [
        #"{"a": [1, -2, 0, 3.25, -0.5, 1e3, 2.0, 1E-2, 12345678901234567890, -9223372036854775808], "b": {}}"#,
        #"[true, false, null, "", "plain", "esc \" \\ \/ \b \f \n \r \t", "\u00fc\u2192\ud83c\udfac", "ü→🎬"]"#,
        " \n\t{ \"spaced\" : [ 1 , { \"x\" : null } ] }\r\n ",
        #"{"dup": 1, "dup": 2}"#,
        #""top-level string""#, "42", "-0", "-0.0", "1e18", "9007199254740993", "[[[[[]]]]]",
    ])
    func sameAsFoundation(text: String) throws {
        #expect(try JSONValue(parsing: Array(text.utf8)) == viaFoundation(text))
    }

    @Test("random values round-trip through our encoder and parser")
    func randomRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        func value(depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2: return .integer(Int64.random(in: .min ... .max, using: &generator))
            case 3: return .double(Double.random(in: -1e6...1e6, using: &generator).rounded(.towardZero) + 0.5)
            case 4: return .string(String((0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                "aZ09 \"\\/\n\u{1}é→🎬".randomElement(using: &generator)! }))
            case 5: return .array((0..<Int.random(in: 0..<4, using: &generator)).map { _ in value(depth: depth + 1) })
            default:
                return .object(Dictionary((0..<Int.random(in: 0..<4, using: &generator)).map {
                    ("k\($0)", value(depth: depth + 1)) }, uniquingKeysWith: { first, _ in first }))
            }
        }
        for _ in 0..<100 {
            let original = value(depth: 0)
            let text = try JSONEncoder().encode(original)
            #expect(try JSONValue(parsing: text) == original)
            #expect(try JSONValue(encoding: original) == original)
        }
    }

    @Test("what is not JSON is refused", arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "-", "tru", "\"unterminated", "\"\u{1}\"", "[1] 2",
        #""\x""#, #""\ud800""#, #""\udc00""#, "1e400", String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ])
    func refused(text: String) {
        #expect(throws: JSONError.self) { try JSONValue(parsing: Array(text.utf8)) }
    }
}
