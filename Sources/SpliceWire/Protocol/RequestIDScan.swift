internal import Foundation
internal import SpliceJSON

/// Finds an envelope's request id (its top-level `"id"` string) in a frame that is too large to
/// be parsed (docs/protocol.md, Limits), reading the bytes where they lie: nothing is copied and
/// nothing but the id is decoded. Structure is followed only as far as it must be to tell the
/// top-level keys from everything nested in the values (strings, escapes, brackets), so a value
/// of any size is skipped in one pass. Anything that does not look like a JSON object, and an id
/// that is not a string or is longer than ``maxBytes``, gives nil: no id, no reply.
enum RequestIDScan {
    /// The longest id worth echoing (a UUID is 36 bytes).
    static let maxBytes = 256

    /// The top-level `"id"` of the JSON object in `bytes`, or nil.
    static func requestID(in bytes: UnsafeRawBufferPointer) -> String? {
        var scanner = Scanner(bytes: bytes)
        return scanner.topLevelID()
    }

    /// The same for bytes held in an array.
    static func requestID(in bytes: some ContiguousBytes) -> String? {
        bytes.withUnsafeBytes { requestID(in: $0) }
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        /// Steps over a string starting at its opening quote; returns the range of its raw
        /// contents (escapes as they are), or nil when it never ends.
        private mutating func string() -> Range<Int>? {
            guard current == UInt8(ascii: "\"") else { return nil }
            index += 1
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\\"): index += 2
                case UInt8(ascii: "\""):
                    defer { index += 1 }
                    return start..<index
                default: index += 1
                }
            }
            return nil
        }

        /// Steps over one value of any kind: a string, an object or array (counting brackets
        /// outside strings), or a scalar (up to the next delimiter).
        private mutating func skipValue() -> Bool {
            switch current {
            case nil:
                return false
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while let byte = current {
                    switch byte {
                    case UInt8(ascii: "\""):
                        guard string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default:
                        break
                    }
                    index += 1
                }
                return false
            default:
                let start = index
                while let byte = current, byte != UInt8(ascii: ","), byte != UInt8(ascii: "}"), byte != UInt8(ascii: "]"),
                      byte != 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D {
                    index += 1
                }
                return index > start
            }
        }

        mutating func topLevelID() -> String? {
            skipWhitespace()
            guard current == UInt8(ascii: "{") else { return nil }
            index += 1
            while true {
                skipWhitespace()
                guard let key = string() else { return nil }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return nil }
                index += 1
                skipWhitespace()
                if key.count == 2, bytes[key.lowerBound] == UInt8(ascii: "i"), bytes[key.lowerBound + 1] == UInt8(ascii: "d") {
                    let start = index
                    guard string() != nil, index - start <= Self.quotedLimit else { return nil }
                    // The quoted text, escapes and all, decoded by the JSON parser (it is small).
                    guard let id = try? JSON.decode(String.self, from: bytes[start..<index]),
                          id.utf8.count <= RequestIDScan.maxBytes else { return nil }
                    return id
                }
                guard skipValue() else { return nil }
                skipWhitespace()
                guard current == UInt8(ascii: ",") else { return nil }
                index += 1
            }
        }

        /// The id's limit with its quotes and room for escapes.
        private static let quotedLimit = RequestIDScan.maxBytes * 6 + 2
    }
}
