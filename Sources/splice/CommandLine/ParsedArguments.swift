/// The typed values of one command line, read back through the declarations that described them:
///
///     width = arguments[Self.width]             // Int? — the value, the default, or nil
///     input = try arguments.value(Self.input)   // String — throws if absent
///     tags = arguments.values(Self.tag)         // [String] — every occurrence, in order
///     faststart = arguments[Self.faststart]     // Bool
struct ParsedArguments: Sendable {
    /// Converted values by ``ArgumentSpec/displayName``, in command-line order.
    private var storage: [String: [any Sendable]] = [:]

    init() {}

    mutating func append(_ value: any Sendable, for spec: ArgumentSpec) {
        storage[spec.displayName, default: []].append(value)
    }

    func contains(_ spec: ArgumentSpec) -> Bool {
        storage[spec.displayName] != nil
    }

    /// Every value given, in order (for repeatable arguments); the default when none was.
    func values<Argument: TypedArgument>(_ argument: Argument) -> [Argument.Value] {
        guard let stored = storage[argument.spec.displayName] else {
            return argument.defaultValue.map { [$0] } ?? []
        }
        // The parser stored what this declaration's own conversion returned.
        return stored.map { $0 as! Argument.Value }
    }

    /// The last value given, else the default, else `nil`.
    subscript<Argument: TypedArgument>(_ argument: Argument) -> Argument.Value? {
        values(argument).last
    }

    /// Whether the flag was given (or set through its environment variable).
    subscript(_ flag: Flag) -> Bool {
        storage[flag.spec.displayName]?.last as? Bool ?? false
    }

    /// The value of an argument the command cannot do without; throws the usual "missing" error.
    func value<Argument: TypedArgument>(_ argument: Argument) throws -> Argument.Value {
        guard let value = self[argument] else { throw UsageError.missing(argument.spec) }
        return value
    }
}
