/// `--help` text, generated from the same tables the parser reads, so it cannot drift from them.
enum HelpFormatter {
    /// Where descriptions start: two spaces, a 24-column label, two spaces.
    private static let descriptionColumn = 28

    /// The full help of the last command in `path` (`path[0]` is the root).
    static func help(for path: [any Command.Type], columns: Int = 80) -> String {
        let width = min(max(columns, 60), 100)
        let configuration = path[path.count - 1].configuration
        let visible = configuration.specs.filter { !$0.isHidden }
        var sections: [String] = []

        sections.append(wrap("OVERVIEW: " + configuration.abstract, indent: 0, width: width))
        if !configuration.discussion.isEmpty {
            sections.append(configuration.discussion.split(separator: "\n", omittingEmptySubsequences: false)
                .map { wrap(String($0), indent: 0, width: width) }.joined(separator: "\n"))
        }
        sections.append("USAGE: " + usage(for: path).joined(separator: "\n       "))

        let positionals = visible.filter { $0.kind == .positional }
        if !positionals.isEmpty {
            sections.append(section("ARGUMENTS", positionals.map { entry("<" + $0.name + ">", describe($0), width) }))
        }
        let named = visible.filter { $0.kind != .positional }
        sections.append(section("OPTIONS", named.map { entry(label($0), describe($0), width) }))

        let variables = named.compactMap { spec in spec.environmentVariable.map { ($0, "Sets " + spec.displayName + ".") } }
            + configuration.environment.map { ($0.name, $0.help) }
        if !variables.isEmpty {
            sections.append(section("ENVIRONMENT", variables.map { entry($0.0, $0.1, width) }))
        }

        let subcommands = configuration.subcommands.map { $0.configuration }.filter { !$0.isHidden }
        if !subcommands.isEmpty {
            sections.append(section("SUBCOMMANDS", subcommands.map { entry($0.name, $0.abstract, width) }))
            let name = path.map { $0.configuration.name }.joined(separator: " ")
            sections.append("See '" + name + " <subcommand> --help' for detailed help.")
        }
        return sections.joined(separator: "\n\n") + "\n"
    }

    /// The usage lines of the last command in `path`: its own arguments, then `<subcommand>` if it
    /// has subcommands. A pure group (no arguments of its own) shows only the second.
    static func usage(for path: [any Command.Type]) -> [String] {
        let name = path.map { $0.configuration.name }.joined(separator: " ")
        let configuration = path[path.count - 1].configuration
        let visible = configuration.specs.filter { !$0.isHidden }
        let hasOwnArguments = visible.contains { $0.name != BuiltInFlag.help.spec.name }
        let hasSubcommands = !configuration.visibleSubcommandNames.isEmpty
        var lines: [String] = []
        if hasOwnArguments || !hasSubcommands {
            var line = name + " [<options>]"
            for spec in visible where spec.kind != .positional && spec.isRequired {
                line += " " + spec.synopsis
            }
            for spec in visible where spec.kind == .positional {
                line += " " + (spec.isRequired ? spec.synopsis : "[" + spec.synopsis + "]")
            }
            lines.append(line)
        }
        if hasSubcommands { lines.append(name + " <subcommand>") }
        return lines
    }

    private static func section(_ title: String, _ entries: [String]) -> String {
        title + ":\n" + entries.joined(separator: "\n")
    }

    private static func label(_ spec: ArgumentSpec) -> String {
        (spec.shortName.map { "-" + String($0) + ", " } ?? "") + spec.synopsis
    }

    /// The help text followed by what else a user needs: allowed values, default, variable.
    private static func describe(_ spec: ArgumentSpec) -> String {
        var notes: [String] = []
        if let values = spec.allowedValues { notes.append("values: " + values.joined(separator: ", ")) }
        if let value = spec.defaultDescription { notes.append("default: " + value) }
        if let variable = spec.environmentVariable { notes.append("env: " + variable) }
        if spec.isRepeatable, spec.kind == .option { notes.append("repeatable") }
        if spec.isRequired, spec.kind == .option { notes.append("required") }
        return notes.isEmpty ? spec.help : spec.help + " (" + notes.joined(separator: "; ") + ")"
    }

    /// `  label      description…`, the description wrapped in its column; a label too wide for
    /// the column gets a line of its own.
    private static func entry(_ label: String, _ description: String, _ width: Int) -> String {
        let text = wrap(description, indent: descriptionColumn, width: width)
        let start = "  " + label
        if start.count + 2 <= descriptionColumn {
            return start + String(repeating: " ", count: descriptionColumn - start.count)
                + text.dropFirst(descriptionColumn)
        }
        return start + "\n" + text
    }

    /// `text` broken into lines of at most `width` columns, each indented by `indent` spaces.
    /// A word ending in `:` stays with the next one (`env: SPLICE_COORDINATOR`).
    static func wrap(_ text: String, indent: Int, width: Int) -> String {
        let margin = String(repeating: " ", count: indent)
        var words: [String] = []
        for word in text.split(separator: " ") {
            if let last = words.last, last.hasSuffix(":") {
                words[words.count - 1] += " " + word
            } else {
                words.append(String(word))
            }
        }
        var lines: [String] = []
        var line = ""
        for word in words {
            if !line.isEmpty, indent + line.count + 1 + word.count > width {
                lines.append(margin + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        lines.append(margin + line)
        return lines.joined(separator: "\n")
    }
}
