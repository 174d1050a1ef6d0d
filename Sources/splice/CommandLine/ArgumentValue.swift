/// A type an option or a positional argument converts one command-line word into.
///
/// `String`, `Int` and `Double` conform; an enum of named choices conforms by declaring
/// `: String, CaseIterable, ArgumentValue` and gets its allowed values listed in help and errors.
/// Types from other modules either conform here (`extension MediaTime: ArgumentValue`) or are
/// converted by a closure given to ``Option`` / ``Positional``.
protocol ArgumentValue: Sendable {
    /// Converts `argument`; throws ``InvalidArgumentValue`` saying what was expected.
    init(argument: String) throws
    /// The words accepted, for help and error messages; `nil` when the type is open-ended.
    static var allowedValues: [String]? { get }
}

extension ArgumentValue {
    static var allowedValues: [String]? { nil }
}

/// Thrown by a conversion when the word is not what the argument takes.
struct InvalidArgumentValue: Error {
    /// Completes the sentence "'x' is not …": `an integer`, `one of fast, slow`.
    var expected: String
}

extension String: ArgumentValue {
    init(argument: String) {
        self = argument
    }
}

extension Int: ArgumentValue {
    init(argument: String) throws {
        guard let value = Int(argument) else { throw InvalidArgumentValue(expected: "an integer") }
        self = value
    }
}

extension Double: ArgumentValue {
    init(argument: String) throws {
        guard let value = Double(argument), value.isFinite else { throw InvalidArgumentValue(expected: "a number") }
        self = value
    }
}

extension ArgumentValue where Self: CaseIterable & RawRepresentable, RawValue == String {
    init(argument: String) throws {
        guard let match = Self.allCases.first(where: { $0.rawValue == argument }) else {
            throw InvalidArgumentValue(expected: "one of " + Self.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = match
    }

    static var allowedValues: [String]? { allCases.map(\.rawValue) }
}
