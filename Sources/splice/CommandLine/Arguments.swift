/// Everything the parser and the help text know about one declared argument.
struct ArgumentSpec: Sendable {
    enum Kind: Sendable {
        /// `--name value` or `--name=value`.
        case option
        /// `--name`, no value.
        case flag
        /// A bare word, matched by position.
        case positional
    }

    var kind: Kind
    /// The long name without dashes, or the positional's name.
    var name: String
    var shortName: Character?
    /// Shown as `<valueName>` in help and usage.
    var valueName: String
    var help: String
    /// Read when the argument is not on the command line.
    var environmentVariable: String?
    var isRequired: Bool
    var isRepeatable: Bool
    var isHidden: Bool
    var defaultDescription: String?
    var allowedValues: [String]?
    /// A positional whose values may start with `-` (a Z85 key can): a word of three or more
    /// characters with one leading dash that lands on it is its value, not an unknown option.
    var acceptsLeadingDash = false
    /// The value of an option given without one (`--verify` alone is `--verify fail`); the next
    /// word is then its value only when it is one of ``allowedValues``. Nil: a value is required.
    var impliedValue: String? = nil
    /// Completes "'x' is not …" when the conversion returns `nil`.
    var expected: String
    /// One word to a typed value (stored as `any Sendable`, read back by the typed declaration).
    var convert: @Sendable (String) throws -> any Sendable

    /// `--width`, `<input>`: how messages name the argument.
    var displayName: String {
        kind == .positional ? "<" + name + ">" : "--" + name
    }

    /// `--width <pixels>`, `--faststart`, `<input>`: the argument as typed.
    var synopsis: String {
        switch kind {
        case .option where impliedValue != nil: "--" + name + "[=<" + valueName + ">]"
        case .option: "--" + name + " <" + valueName + ">"
        case .flag: "--" + name
        case .positional: "<" + valueName + ">" + (isRepeatable ? " ..." : "")
        }
    }
}

/// A declaration that can go in a command's argument table.
protocol ArgumentDeclaration: Sendable {
    var spec: ArgumentSpec { get }
}

/// A declaration whose parsed words become values of one type.
protocol TypedArgument: ArgumentDeclaration {
    associatedtype Value: Sendable
    /// Used when the argument is absent from both the command line and the environment.
    var defaultValue: Value? { get }
}

/// An option with a value: `--width 1280` or `--width=1280`.
///
///     static let width = Option<Int>("width", valueName: "pixels", help: "Output width.")
///     static let start = Option<MediaTime>("start", valueName: "time", help: "Start of the range.",
///                                          expected: "a time like 1.5 or 00:01:02.5") { MediaTime(parsing: $0) }
struct Option<Value: Sendable>: TypedArgument {
    private(set) var spec: ArgumentSpec
    let defaultValue: Value?

    /// An option converted by `parse`; `parse` returns `nil` or throws when the word is not valid.
    init(_ name: String, short: Character? = nil, valueName: String? = nil, help: String,
         default defaultValue: Value? = nil, environment: String? = nil, isRequired: Bool = false,
         isRepeatable: Bool = false, isHidden: Bool = false, expected: String? = nil,
         parse: @escaping @Sendable (String) throws -> Value?) {
        spec = ArgumentSpec(kind: .option, name: name, shortName: short, valueName: valueName ?? name, help: help,
                            environmentVariable: environment, isRequired: isRequired && defaultValue == nil,
                            isRepeatable: isRepeatable, isHidden: isHidden,
                            defaultDescription: defaultValue.map { String(describing: $0) }, allowedValues: nil,
                            expected: expected ?? "a valid " + (valueName ?? name), convert: checked(parse))
        self.defaultValue = defaultValue
    }

    /// An option whose value type converts itself.
    init(_ name: String, short: Character? = nil, valueName: String? = nil, help: String,
         default defaultValue: Value? = nil, environment: String? = nil, isRequired: Bool = false,
         isRepeatable: Bool = false, isHidden: Bool = false) where Value: ArgumentValue {
        self.init(name, short: short, valueName: valueName, help: help, default: defaultValue,
                  environment: environment, isRequired: isRequired, isRepeatable: isRepeatable,
                  isHidden: isHidden, parse: Value.init(argument:))
        spec.allowedValues = Value.allowedValues
    }

    /// An option of named choices that may be given without a value, meaning `implied`
    /// (`--verify` is `--verify fail`; `--verify warn` and `--verify=warn` choose).
    init(_ name: String, valueName: String? = nil, help: String, implied: Value, environment: String? = nil)
        where Value: ArgumentValue & RawRepresentable, Value.RawValue == String {
        self.init(name, valueName: valueName, help: help, environment: environment)
        spec.impliedValue = implied.rawValue
    }
}

/// A positional argument, matched by its place among the bare words.
struct Positional<Value: Sendable>: TypedArgument {
    private(set) var spec: ArgumentSpec
    let defaultValue: Value?

    /// A positional converted by `parse`. A repeatable positional takes all remaining words and
    /// must come last; an optional one must not be followed by a required one.
    init(_ name: String, help: String, isRequired: Bool = true, isRepeatable: Bool = false,
         default defaultValue: Value? = nil, expected: String? = nil, acceptsLeadingDash: Bool = false,
         parse: @escaping @Sendable (String) throws -> Value?) {
        spec = ArgumentSpec(kind: .positional, name: name, shortName: nil, valueName: name, help: help,
                            environmentVariable: nil, isRequired: isRequired && defaultValue == nil,
                            isRepeatable: isRepeatable, isHidden: false,
                            defaultDescription: defaultValue.map { String(describing: $0) }, allowedValues: nil,
                            expected: expected ?? "a valid " + name, convert: checked(parse))
        spec.acceptsLeadingDash = acceptsLeadingDash
        self.defaultValue = defaultValue
    }

    /// A positional whose value type converts itself.
    init(_ name: String, help: String, isRequired: Bool = true, isRepeatable: Bool = false,
         default defaultValue: Value? = nil) where Value: ArgumentValue {
        self.init(name, help: help, isRequired: isRequired, isRepeatable: isRepeatable, default: defaultValue,
                  parse: Value.init(argument:))
        spec.allowedValues = Value.allowedValues
    }
}

/// A flag: present or absent, `--faststart`. From the environment it reads true/false, 1/0, yes/no.
struct Flag: ArgumentDeclaration {
    let spec: ArgumentSpec

    init(_ name: String, short: Character? = nil, help: String, environment: String? = nil, isHidden: Bool = false) {
        spec = ArgumentSpec(kind: .flag, name: name, shortName: short, valueName: name, help: help,
                            environmentVariable: environment, isRequired: false, isRepeatable: false,
                            isHidden: isHidden, defaultDescription: nil, allowedValues: nil,
                            expected: "one of true, false, 1, 0, yes, no", convert: checked(Flag.boolean))
    }

    private static func boolean(_ word: String) -> Bool? {
        switch word.lowercased() {
        case "1", "true", "yes", "on": true
        case "0", "false", "no", "off": false
        default: nil
        }
    }
}

/// A group of declarations shared by several commands (the export flags of `export`, `transcode`
/// and `submit`). A command appends `Group.arguments` to its table and builds the group in its init.
protocol OptionGroup: Sendable {
    static var arguments: [any ArgumentDeclaration] { get }
    init(_ arguments: ParsedArguments) throws
}

/// Wraps a typed conversion: `nil` becomes ``InvalidArgumentValue`` with `expected` filled in later.
private func checked<Value: Sendable>(_ parse: @escaping @Sendable (String) throws -> Value?)
    -> @Sendable (String) throws -> any Sendable {
    { word in
        guard let value = try parse(word) else { throw InvalidArgumentValue(expected: "") }
        return value
    }
}
