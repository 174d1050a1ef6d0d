import Foundation
import SpliceCore
import SpliceJSON
import Testing

/// What Foundation writes with the options Splice's text is held to.
private func reference(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

private func written(_ value: some Encodable) throws -> String {
    String(decoding: try JSON.encode(value), as: UTF8.self)
}

@Suite("JSON.encode writes what JSONEncoder writes")
struct JSONWriterTests {
    struct Awkward: Codable {
        var text = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} nul \u{0} ü→🎬"
        var integers: [Int64] = [0, -1, .max, .min]
        var small: [Int32] = [0, .max, .min]
        var doubles: [Double] = [0.25, 2, -3, 1e-7, 1.5e300, 0.1 + 0.2, 123456789.125]
        var missing: String? = nil
        var present: Int? = 4
        var flags = [true, false]
        var nested: [[String]] = [[], ["a", "b"]]
        var map = ["zeta": 1, "alpha": 2, "Beta": 3, "a10": 4, "a9": 5]
        var numbered = [3: "three", 1: "one"]
        var json: JSONValue = .object([
            "z": .array([.null, .bool(true), .integer(-7), .double(0.5), .string("x\"y")]),
            "A": .object(["inner": .object([:]), "empty": .array([])]),
        ])
        var nothing = Empty()
        var unsigned: UInt8 = 255
        var short: Int16 = -300
        var float: Float = 0.1
        var at = Date(timeIntervalSince1970: 1)
        var bytes = Data([0, 1, 2, 254, 255])
        var link = URL(string: "https://example.com/a/b?c=d")!
        var job = JobID("7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c")!
        var lease = LeaseToken("7c1e9d2a-5b7e-4c11-9f00-abcdef012345")!
        var digest = SHA256Digest(bytes: [UInt8](repeating: 0xAB, count: 32))!
        var choice = Choice.pair(left: 1, right: "r")
    }

    struct Empty: Codable {}

    /// Synthesized Codable of an enum with associated values uses nested containers.
    enum Choice: Codable, Equatable {
        case none
        case pair(left: Int, right: String)
        case list([Int])
    }

    struct Twice: Encodable {
        func encode(to encoder: any Encoder) throws {
            enum Key: CodingKey { case b, a }
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(1, forKey: .b)
            try container.encode(["x": 1], forKey: .a)
            try container.encode(2, forKey: .b)
        }
    }

    struct Nested: Encodable {
        func encode(to encoder: any Encoder) throws {
            enum Key: CodingKey { case outer, inner, list, after }
            var container = encoder.container(keyedBy: Key.self)
            var inner = container.nestedContainer(keyedBy: Key.self, forKey: .outer)
            try inner.encode(1, forKey: .inner)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try list.encode(2)
            var deeper = list.nestedContainer(keyedBy: Key.self)
            try deeper.encode(3, forKey: .inner)
            try list.encode(4)
            try container.encode(5, forKey: .after)
        }
    }

    @Test("strings, numbers, optionals, nesting, dictionaries, dates, data, URLs, ids and JSONValue")
    func awkwardValues() throws {
        #expect(try written(Awkward()) == reference(Awkward()))
        #expect(try written(Twice()) == reference(Twice()), "a key encoded twice keeps its last value")
        #expect(try written([Twice(), Twice()]) == reference([Twice(), Twice()]))
        #expect(try written(Nested()) == reference(Nested()))
        for choice in [Choice.none, .pair(left: 1, right: "r"), .list([1, 2])] {
            #expect(try written(choice) == reference(choice))
            #expect(try JSON.decode(Choice.self, from: JSON.encode(choice)) == choice)
        }
        #expect(try written(["top", "level"]) == reference(["top", "level"]))
        #expect(try written(JSONValue.integer(3)) == reference(JSONValue.integer(3)))
    }

    struct Super: Encodable {
        func encode(to encoder: any Encoder) throws {
            enum Key: CodingKey { case a }
            var container = encoder.container(keyedBy: Key.self)
            _ = container.superEncoder()
        }
    }

    /// Keeps the encoder it was given, to write through it later (which no real type does).
    final class Leak: @unchecked Sendable { var encoder: (any Encoder)? }

    struct Leaky: Encodable {
        let leak: Leak
        func encode(to encoder: any Encoder) throws {
            leak.encoder = encoder
            var container = encoder.singleValueContainer()
            try container.encode(1)
        }
    }

    struct Late: Encodable {
        let leak: Leak
        func encode(to encoder: any Encoder) throws {
            var mine = encoder.singleValueContainer()
            try mine.encode(2)
            var stale = leak.encoder!.singleValueContainer()
            try stale.encode(3)
        }
    }

    struct Pair: Encodable {
        let leak = Leak()
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(Leaky(leak: leak))
            try container.encode(Late(leak: leak))
        }
    }

    @Test("what has no JSON form is refused, never written half")
    func refused() {
        #expect(throws: JSONError.self, "an encoder used after its value is written") { try JSON.encode(Pair()) }
        #expect(throws: JSONError.self) { try JSON.encode(Double.nan) }
        #expect(throws: JSONError.self) { try JSON.encode([Double.infinity]) }
        #expect(throws: JSONError.self) { try JSON.encode(Super()) }
        do {
            _ = try JSON.encode(Double.nan)
        } catch {
            #expect(error.code == .unencodable && !error.isRetryable)
        }
    }
}

@Suite("JSON.decode reads what JSONDecoder reads")
struct JSONDecoderTests {
    private func both<T: Decodable & Equatable>(_ type: T.Type, _ text: String) throws -> (T?, T?) {
        (try? JSONDecoder().decode(type, from: Data(text.utf8)), try? JSON.decode(type, from: Array(text.utf8)))
    }

    @Test("every field of an awkward value comes back")
    func roundTrip() throws {
        let value = JSONWriterTests.Awkward()
        let decoded = try JSON.decode(JSONWriterTests.Awkward.self, from: JSON.encode(value))
        #expect(try written(decoded) == written(value))
    }

    struct Numbers: Codable, Equatable {
        var int: Int
        var small: Int32
        var double: Double
        var optional: Int?
    }

    @Test("numbers: exact integers only, doubles from integers, null and absent for optionals", arguments: [
        #"{"int": 1, "small": 2, "double": 3}"#,
        #"{"int": 1, "small": 2, "double": 3.5, "optional": null}"#,
        #"{"int": 1.0, "small": 2e0, "double": -0.0, "optional": 7}"#,
        #"{"int": 1.5, "small": 2, "double": 3}"#,
        #"{"int": 9223372036854775808, "small": 2, "double": 3}"#,
        #"{"int": 1, "small": 4294967296, "double": 3}"#,
        #"{"int": "1", "small": 2, "double": 3}"#,
        #"{"int": null, "small": 2, "double": 3}"#,
        #"{"small": 2, "double": 3}"#,
        #"{"int": 1, "small": 2, "double": true}"#,
    ])
    func numbers(text: String) throws {
        let (foundation, ours) = try both(Numbers.self, text)
        #expect(foundation == ours)
    }

    struct Optionals: Codable, Equatable {
        struct Inner: Codable, Equatable { var count: Int }
        var flag: Bool?
        var name: String?
        var ratio: Double?
        var large: Int64?
        var inner: Inner?
        var list: [Int]?
    }

    @Test("optionals of every kind: present, null, absent or of the wrong type, as JSONDecoder decodes them", arguments: [
        #"{"flag": true, "name": "n", "ratio": 0.5, "large": 9007199254740993, "inner": {"count": 2}, "list": [1]}"#,
        #"{"flag": null, "name": null, "ratio": null, "large": null, "inner": null, "list": null}"#,
        "{}",
        #"{"flag": 1}"#, #"{"name": 2}"#, #"{"ratio": "x"}"#, #"{"large": 1.5}"#, #"{"inner": {}}"#, #"{"list": {}}"#,
        #"{"name": "first", "name": "second"}"#,
    ])
    func optionals(text: String) throws {
        let (foundation, ours) = try both(Optionals.self, text)
        #expect(foundation == ours)
    }

    @Test("failures are DecodingErrors with the path to the field")
    func paths() throws {
        struct Outer: Decodable { var items: [Inner] }
        struct Inner: Decodable { var count: Int }
        do {
            _ = try JSON.decode(Outer.self, from: Array(#"{"items": [{"count": 1}, {"count": "x"}]}"#.utf8))
            Issue.record("decoded")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["items", "1", "count"])
        }
        do {
            _ = try JSON.decode(Outer.self, from: Array(#"{"items": [{}]}"#.utf8))
            Issue.record("decoded")
        } catch let DecodingError.keyNotFound(key, _) {
            #expect(key.stringValue == "count")
        }
        #expect(throws: JSONError.self) { try JSON.decode(Outer.self, from: Array("{".utf8)) }
    }

    @Test("ids and digests are refused unless they are what they say")
    func vocabulary() throws {
        struct Names: Decodable { var job: JobID; var digest: SHA256Digest }
        let digest = "sha256:" + String(repeating: "ab", count: 32)
        let good = #"{"job": "7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c", "digest": "\#(digest)"}"#
        #expect(try JSON.decode(Names.self, from: Array(good.utf8)).job.description == "7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c")
        #expect(throws: DecodingError.self) {
            try JSON.decode(Names.self, from: Array(#"{"job": "job-1", "digest": "\#(digest)"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSON.decode(Names.self, from: Array(#"{"job": "7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c", "digest": "c"}"#.utf8))
        }
    }

    @Test("a repeated key keeps its first value, as JSONDecoder keeps it")
    func repeatedKey() throws {
        struct One: Decodable, Equatable { var a: Int }
        let (foundation, ours) = try both(One.self, #"{"a": 1, "a": 2}"#)
        #expect(ours == One(a: 1) && foundation == ours)
    }
}

@Suite("JSONPayload: encoded once, decoded once")
struct JSONPayloadTests {
    struct Order: Codable, Equatable {
        var source: String
        var start: Int64
        var settings: [String: Double]
    }

    let order = Order(source: "/in.mov", start: 9_007_199_254_740_993, settings: ["crf": 20.5, "fps": 25])

    struct Envelope: Codable, Equatable {
        var spec: JSONPayload
        var type: String
    }

    @Test("embedded as it is, read back as a document, decoded into the type")
    func roundTrip() throws {
        let payload = try JSONPayload(encoding: order)
        #expect(payload.description == (try written(order)))
        let text = try JSON.encode(Envelope(spec: payload, type: "ASSIGN"))
        #expect(String(decoding: text, as: UTF8.self) == #"{"spec":\#(payload.description),"type":"ASSIGN"}"#)
        let read = try JSON.decode(Envelope.self, from: text)
        #expect(read.spec == payload, "equal whichever form each holds")
        #expect(try read.spec.decode(Order.self) == order)
        #expect(try JSON.encode(read) == text)
        // Through Foundation too: the payload is its value there.
        let viaFoundation = try JSONDecoder().decode(Envelope.self, from: Data(text))
        #expect(try viaFoundation.spec.decode(Order.self) == order)
        #expect(try reference(viaFoundation) == String(decoding: text, as: UTF8.self))
    }

    @Test("a payload of a value compares and hashes by that value")
    func equality() throws {
        let tree = try JSONValue(encoding: order)
        #expect(try JSONPayload(encoding: order) == JSONPayload(tree))
        #expect(Set([try JSONPayload(encoding: order), JSONPayload(tree)]).count == 1)
        #expect(try JSONPayload(encoding: order) != JSONPayload(.object([:])))
    }
}
