import Testing

@testable import splice

@Suite("Help")
struct HelpTests {
    @Test("help shows every visible argument with its value name, default, values and variable")
    func everyOption() {
        let help = HelpFormatter.help(for: [FakeRoot.self, FakeExport.self])
        #expect(help.hasPrefix("OVERVIEW: Transcode a file on this machine.\n"))
        #expect(help.contains("Writes OUTPUT from INPUT with the given settings."))
        #expect(help.contains("USAGE: splice export [<options>] <input> [<output>]\n"))
        for spec in FakeExport.configuration.specs {
            let label = spec.kind == .positional ? "<" + spec.name + ">" : spec.synopsis
            #expect(help.contains(label), "help lacks \(label)")
            #expect(help.contains(spec.help), "help lacks the text of \(label)")
        }
        #expect(help.contains("  -w, --width <pixels>      Output width in pixels.\n"))
        #expect(flattened(help).contains("Encoder speed preset. (values: ultrafast, superfast, veryfast, faster, "
                                              + "fast, medium, slow, slower, veryslow; default: medium)"))
        #expect(help.contains("--metadata <key=value>    A global tag. (repeatable)"))
        #expect(help.contains("  -h, --help                Show help for this command."))
    }

    @Test("required options appear in the usage line; variables in the option list")
    func requiredAndEnvironment() {
        let help = HelpFormatter.help(for: [FakeRoot.self, FakeDatabase.self, FakeMigrate.self])
        #expect(help.contains("USAGE: splice db migrate [<options>] --database <url>\n"))
        #expect(help.contains("  --database <url>          PostgreSQL connection URL.\n"
                                  + "                            (env: SPLICE_DATABASE_URL; required)\n"))
        #expect(flattened(help).contains("--dry-run Print the migrations without applying them. (env: SPLICE_DRY_RUN)"))
    }

    @Test("groups list their subcommands; hidden commands stay out")
    func groups() {
        let root = HelpFormatter.help(for: [FakeRoot.self])
        #expect(root.contains("USAGE: splice [<options>]\n       splice <subcommand>\n"))
        #expect(root.contains("  export                    Transcode a file on this machine.\n"))
        #expect(root.contains("  db                        Manage the job database.\n"))
        #expect(!root.contains("fail"))
        #expect(!root.contains("drain"))
        let database = HelpFormatter.help(for: [FakeRoot.self, FakeDatabase.self])
        #expect(database.contains("USAGE: splice db <subcommand>\n\n"))
        #expect(database.contains("See 'splice db <subcommand> --help' for detailed help."))
        let workers = HelpFormatter.help(for: [FakeRoot.self, FakeWorkers.self])
        #expect(workers.contains("USAGE: splice workers [<options>]\n       splice workers <subcommand>\n"))
    }

    @Test("long descriptions wrap under their column")
    func wrapping() {
        let text = HelpFormatter.wrap("one two three four five six", indent: 4, width: 16)
        #expect(text == "    one two\n    three four\n    five six")
        #expect(HelpFormatter.wrap("aaa (env: LONG_NAME)", indent: 0, width: 12) == "aaa\n(env: LONG_NAME)")
        let help = HelpFormatter.help(for: [FakeRoot.self, FakeExport.self], columns: 60)
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 60 })
    }

    @Test("--help, -h and `splice help` print the same text and exit 0, even with other arguments missing")
    func helpEntryPoints() async {
        let expected = HelpFormatter.help(for: [FakeRoot.self, FakeDatabase.self, FakeMigrate.self])
        for words in [["db", "migrate", "--help"], ["db", "migrate", "-h"], ["help", "db", "migrate"],
                      ["db", "migrate", "--database", "--help"]] {
            let result = await runCLI(words)
            #expect(result.code == .success, "\(words)")
            #expect(result.stdout == expected, "\(words)")
            #expect(result.stderr.isEmpty)
        }
        let afterTerminator = await runCLI(["export", "--", "--help"])
        #expect(afterTerminator.stdout == "export --help preset=medium\n")
    }

    @Test("`splice help` with an unknown command suggests the closest")
    func helpUnknown() async {
        let result = await runCLI(["help", "exprot"])
        #expect(result.code == .usage)
        #expect(result.stderr == "splice help: unknown subcommand 'exprot'; did you mean 'export'?\n"
            + "see 'splice help --help'\n")
    }

    @Test("every command table in the real and the test trees is consistent")
    func tablesAreConsistent() {
        #expect(problems(in: SpliceCommand.self, path: "splice") == [])
        #expect(problems(in: FakeRoot.self, path: "splice") == [])
    }

    /// `text` with every run of spaces and newlines made one space, so checks ignore wrapping.
    private func flattened(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Duplicate names, clashes with -h/--help, and positionals the parser could not assign.
    private func problems(in command: any Command.Type, path: String) -> [String] {
        let configuration = command.configuration
        let specs = configuration.arguments.map(\.spec)
        var problems: [String] = []
        let named = specs.filter { $0.kind != .positional }
        if Set(named.map(\.name)).count != named.count { problems.append(path + ": duplicate option names") }
        let shorts = named.compactMap(\.shortName)
        if Set(shorts).count != shorts.count { problems.append(path + ": duplicate short names") }
        if named.contains(where: { $0.name == "help" || $0.shortName == "h" }) {
            problems.append(path + ": --help and -h are reserved")
        }
        if named.contains(where: { $0.name.isEmpty || $0.name.hasPrefix("-") || $0.name.contains("=") }) {
            problems.append(path + ": an option name is empty, starts with - or contains =")
        }
        let positionals = specs.filter { $0.kind == .positional }
        for (index, spec) in positionals.enumerated() {
            if spec.isRepeatable, index != positionals.count - 1 {
                problems.append(path + ": repeatable <" + spec.name + "> is not last")
            }
            if spec.isRequired, positionals[..<index].contains(where: { !$0.isRequired }) {
                problems.append(path + ": required <" + spec.name + "> follows an optional one")
            }
        }
        let names = configuration.subcommands.map { $0.configuration.name }
        if Set(names).count != names.count { problems.append(path + ": duplicate subcommand names") }
        for subcommand in configuration.subcommands {
            problems += self.problems(in: subcommand, path: path + " " + subcommand.configuration.name)
        }
        return problems
    }
}
