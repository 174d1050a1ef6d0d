public import SpliceCore

/// Why a value could not be written as JSON, or bytes could not be read as JSON. (A document that
/// is JSON but does not have the shape a type expects throws the standard `DecodingError`, with
/// the coding path of the failure.) Never retryable: the same value or bytes fail the same way.
public typealias JSONError = CodedError<JSONErrorCode>

/// The stable codes of ``JSONError``.
public enum JSONErrorCode: String, Sendable, Hashable {
    /// The bytes are not one JSON value (RFC 8259).
    case notJSON = "not-json"
    /// The value has no JSON form here (a non-finite number, a super encoder…).
    case unencodable
}
