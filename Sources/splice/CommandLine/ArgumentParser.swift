/// Matches command-line words against a command's argument table.
///
/// Rules: `--name value`, `--name=value` and `-n value` for options; `--name` for flags; options
/// anywhere among the positionals; `--` ends options (everything after is positional); a lone `-`
/// is positional (stdin). An option's value may start with a single `-` (`--offset -5`) but not
/// with `--`; so may a positional declared `acceptsLeadingDash` (a word of three or more
/// characters: `-n` stays an option). An option declared with an implied value (`--verify`) may
/// stand alone; the next word is then its value only when it is one of its choices. Arguments
/// absent from the command line are read from their environment variable.
enum ArgumentParser {
    static func parse(_ words: [String], specs: [ArgumentSpec], environment: [String: String]) throws
        -> ParsedArguments {
        var parsed = ParsedArguments()
        var bareWords: [String] = []
        var remaining = words[...]
        let named = specs.filter { $0.kind != .positional }
        let positionals = specs.filter { $0.kind == .positional }
        /// Whether the positional the next bare word would fill takes values that start with `-`.
        func nextPositionalTakesDash() -> Bool {
            let slot = positionals.indices.contains(bareWords.count) ? positionals[bareWords.count] : positionals.last
            return slot.map { $0.acceptsLeadingDash && (positionals.indices.contains(bareWords.count) || $0.isRepeatable) }
                ?? false
        }

        while let word = remaining.popFirst() {
            if word == "--" {
                bareWords += remaining
                break
            }
            guard word.hasPrefix("-"), word != "-" else {
                bareWords.append(word)
                continue
            }
            // Options are `--name` or one letter (`-n`): a longer single-dash word is a value.
            if !word.hasPrefix("--"), word.count > 2, nextPositionalTakesDash() {
                bareWords.append(word)
                continue
            }
            let (spec, inlineValue) = try match(word, among: named)
            switch spec.kind {
            case .flag:
                guard inlineValue == nil else { throw UsageError.flagWithValue(spec) }
                if !parsed.contains(spec) { parsed.append(true, for: spec) }
            case .option:
                if parsed.contains(spec), !spec.isRepeatable { throw UsageError.repeated(spec) }
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else if let implied = spec.impliedValue {
                    // The next word is this option's value only when it is one of its choices.
                    if let next = remaining.first, spec.allowedValues?.contains(next) == true {
                        value = next
                        remaining.removeFirst()
                    } else {
                        value = implied
                    }
                } else if let next = remaining.first, !next.hasPrefix("--") {
                    value = next
                    remaining.removeFirst()
                } else {
                    throw UsageError.missingValue(spec)
                }
                parsed.append(try convert(value, for: spec), for: spec)
            case .positional:
                preconditionFailure("positionals are not matched by name")
            }
        }

        try assignPositionals(bareWords, specs: specs.filter { $0.kind == .positional }, to: &parsed)
        try applyEnvironment(environment, specs: specs, to: &parsed)
        return parsed
    }

    /// The declaration `word` names, and the value after `=` if there is one.
    private static func match(_ word: String, among specs: [ArgumentSpec]) throws -> (ArgumentSpec, String?) {
        if word.hasPrefix("--") {
            let body = word.dropFirst(2)
            let name = body.prefix(while: { $0 != "=" })
            let value = name.endIndex < body.endIndex ? String(body[body.index(after: name.endIndex)...]) : nil
            if let spec = specs.first(where: { $0.name == name }) { return (spec, value) }
            let suggestion = Suggestion.closest(to: String(name), among: specs.filter { !$0.isHidden }.map(\.name))
            throw UsageError.unknownOption("--" + name, suggestion: suggestion.map { "--" + $0 })
        }
        if word.count == 2, let spec = specs.first(where: { $0.shortName == word.last }) {
            return (spec, nil)
        }
        throw UsageError.unknownOption(word, suggestion: nil)
    }

    private static func assignPositionals(_ words: [String], specs: [ArgumentSpec],
                                          to parsed: inout ParsedArguments) throws {
        var remaining = words[...]
        for spec in specs {
            if spec.isRepeatable {
                for word in remaining { parsed.append(try convert(word, for: spec), for: spec) }
                remaining = []
            } else if let word = remaining.popFirst() {
                parsed.append(try convert(word, for: spec), for: spec)
            } else if spec.isRequired {
                throw UsageError.missing(spec)
            }
        }
        if let extra = remaining.first { throw UsageError.unexpected(extra) }
    }

    private static func applyEnvironment(_ environment: [String: String], specs: [ArgumentSpec],
                                         to parsed: inout ParsedArguments) throws {
        for spec in specs where spec.kind != .positional && !parsed.contains(spec) {
            if let variable = spec.environmentVariable, let word = environment[variable], !word.isEmpty {
                parsed.append(try convert(word, for: spec, source: variable), for: spec)
            } else if spec.isRequired {
                throw UsageError.missing(spec)
            }
        }
    }

    /// Runs the declaration's conversion; any failure becomes a usage error naming the argument.
    private static func convert(_ word: String, for spec: ArgumentSpec, source: String? = nil) throws -> any Sendable {
        do {
            return try spec.convert(word)
        } catch let invalid as InvalidArgumentValue {
            let expected = invalid.expected.isEmpty ? spec.expected : invalid.expected
            let suggestion = spec.allowedValues.flatMap { Suggestion.closest(to: word, among: $0) }
            throw UsageError.invalidValue(spec, word: word, expected: expected, source: source, suggestion: suggestion)
        } catch {
            let expected = spec.expected + " (" + String(describing: error) + ")"
            throw UsageError.invalidValue(spec, word: word, expected: expected, source: source)
        }
    }
}
