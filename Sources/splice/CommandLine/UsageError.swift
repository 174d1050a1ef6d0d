import SpliceLog

/// A mistake in how the command was invoked. The runner prints it as one line, then points to
/// `--help`, and exits with status 64. Commands throw it from `init` or `validate()` too:
///
///     throw UsageError("--width must be positive; got \(width)")
struct UsageError: Error, CustomStringConvertible, Equatable {
    /// One line naming the argument at fault and, where possible, what would be accepted.
    var message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}

extension UsageError {
    static func unknownOption(_ word: String, suggestion: String?) -> UsageError {
        if let suggestion {
            return UsageError("unknown option '" + word + "'; did you mean '" + suggestion + "'?")
        }
        if !word.hasPrefix("--") {
            return UsageError("unknown option '" + word + "'; put '--' before arguments that start with '-'")
        }
        return UsageError("unknown option '" + word + "'")
    }

    static func missingValue(_ spec: ArgumentSpec) -> UsageError {
        UsageError(spec.displayName + " needs a value: " + spec.synopsis)
    }

    static func flagWithValue(_ spec: ArgumentSpec) -> UsageError {
        UsageError(spec.displayName + " is a flag and takes no value")
    }

    static func repeated(_ spec: ArgumentSpec) -> UsageError {
        UsageError(spec.displayName + " was given more than once; give it once")
    }

    /// `--preset: 'quick' is not one of ultrafast, …`; `source` names an environment variable the
    /// word came from. The word is shown with any password redacted.
    static func invalidValue(_ spec: ArgumentSpec, word: String, expected: String, source: String? = nil,
                             suggestion: String? = nil) -> UsageError {
        var message = spec.displayName + ": '" + Redaction.redactingSecrets(in: word) + "'"
        if let source { message += " (from " + source + ")" }
        message += " is not " + expected
        if let suggestion { message += "; did you mean '" + suggestion + "'?" }
        return UsageError(message)
    }

    static func missing(_ spec: ArgumentSpec) -> UsageError {
        var message = "missing " + spec.synopsis
        if let variable = spec.environmentVariable { message += " (or set " + variable + ")" }
        return UsageError(message)
    }

    static func unexpected(_ word: String) -> UsageError {
        UsageError("unexpected argument '" + Redaction.redactingSecrets(in: word) + "'")
    }

    static func unknownSubcommand(_ word: String, suggestion: String?) -> UsageError {
        var message = "unknown subcommand '" + word + "'"
        if let suggestion { message += "; did you mean '" + suggestion + "'?" }
        return UsageError(message)
    }

    static func missingSubcommand(of command: any Command.Type) -> UsageError {
        UsageError("missing subcommand: one of " + command.configuration.visibleSubcommandNames.joined(separator: ", "))
    }
}
