public import SpliceCore

/// A setting that cannot be used: names the field, what was given and what is allowed. Of the
/// shape every Splice error has: its code is always `invalid-settings`, its message names the
/// field, and no retry helps.
public struct SettingsError: SpliceError, Hashable {
    /// Its one code.
    public enum Code: String, Sendable, Hashable {
        case invalidSettings = "invalid-settings"
    }

    /// The setting's name as the CLI spells it without dashes ("width", "video-codec").
    public var field: String
    /// What was given, as text.
    public var value: String
    /// What is allowed, for people ("a positive integer", "one of ultrafast, fast, medium").
    public var allowed: String

    public init(field: String, value: String, allowed: String) {
        self.field = field
        self.value = value
        self.allowed = allowed
    }

    public var code: Code { .invalidSettings }
    public var message: String { "invalid \(field) '\(value)': must be \(allowed)" }
    public var isRetryable: Bool { false }
    public var description: String { message }

    /// A "one of a, b, c" phrase.
    static func oneOf<S: Sequence>(_ values: S) -> String where S.Element: CustomStringConvertible {
        "one of " + values.map(\.description).joined(separator: ", ")
    }
}
