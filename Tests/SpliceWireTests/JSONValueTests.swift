import Foundation
import SpliceWire
import Testing

@Suite("JSONValue: opaque payloads")
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
