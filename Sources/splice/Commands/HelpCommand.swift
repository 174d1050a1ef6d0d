/// `splice help [<command> ...]`: the same text as `splice <command> --help`.
struct HelpCommand: Command {
    static let command = Positional<String>(
        "command", help: "The command to describe, with its subcommands (`db migrate`).",
        isRequired: false, isRepeatable: true)

    static let configuration = CommandConfiguration(
        name: "help", abstract: "Show help for a command.", arguments: [command])

    let words: [String]

    init(_ arguments: ParsedArguments) {
        words = arguments.values(Self.command)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let (path, rest) = CommandRunner.resolve(words, from: context.root)
        if let unknown = rest.first {
            let names = path[path.count - 1].configuration.visibleSubcommandNames
            throw UsageError.unknownSubcommand(unknown, suggestion: Suggestion.closest(to: unknown, among: names))
        }
        context.output.write(HelpFormatter.help(for: path, columns: context.output.columns))
        return .success
    }
}
