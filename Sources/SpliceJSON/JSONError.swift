public import SpliceCore

/// Why a value could not be written as JSON, or bytes could not be read as JSON. (A document that
/// is JSON but does not have the shape a type expects throws the standard `DecodingError`, with
/// the coding path of the failure.)
public struct JSONError: SpliceError, Hashable {
    /// A stable code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The bytes are not one JSON value (RFC 8259).
        public static let notJSON = Code(rawValue: "not-json")
        /// The value has no JSON form here (a non-finite number, a super encoder…).
        public static let unencodable = Code(rawValue: "unencodable")
    }

    public let code: Code
    public let message: String
    /// Never: the same value or bytes fail the same way every time.
    public var isRetryable: Bool { false }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
