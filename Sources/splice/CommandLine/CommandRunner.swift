import Foundation
import SpliceLog
import SpliceMedia
import SpliceObjectMedia
import SpliceObjectStore

/// Turns a command line into a command, runs it, and turns the outcome into an exit status.
///
/// - `0` the command succeeded (or whatever ``ExitCode`` the command returned);
/// - `64` a ``UsageError``: one line naming the cause, then `see 'splice <cmd> --help'`;
/// - `1` any other error: its description on one line;
/// - `128 + n` the command failed after signal `n` (130 after Ctrl-C, 143 after SIGTERM).
///
/// All messages go to standard error, prefixed with the command path (`splice export: …`).
/// Help goes to standard output.
enum CommandRunner {
    /// Runs the process's command line against `root` with the real environment, streams and
    /// signals, and returns the exit status. A second SIGINT/SIGTERM exits at once (`_exit`: no
    /// cleanup runs, which is what a user pressing Ctrl-C twice asks for).
    static func main(root: any Command.Type) async -> Int32 {
        let shutdown = await ShutdownSignal.installed()
        let environment = ProcessInfo.processInfo.environment
        let code = await run(root: root, arguments: Array(CommandLine.arguments.dropFirst()),
                             environment: environment, output: .standardOutput, errorOutput: .standardError,
                             logger: Logger.configured(environment: environment), shutdown: shutdown,
                             forceExit: { signal in _exit(ExitCode.stopped(by: signal).rawValue) })
        return code.rawValue
    }

    /// Everything ``main(root:)`` does, with every input injectable (tests).
    /// `forceExit` is called on the second signal while a command runs.
    static func run(root: any Command.Type, arguments: [String], environment: [String: String],
                    output: TextOutput, errorOutput: TextOutput, logger: Logger, shutdown: ShutdownSignal,
                    forceExit: @escaping @Sendable (Int32) -> Void) async -> ExitCode {
        let (path, rest) = resolve(arguments, from: root)
        let names = path.map { $0.configuration.name }
        let commandType = path[path.count - 1]

        if rest.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            output.write(HelpFormatter.help(for: path, columns: output.columns))
            return .success
        }

        let command: any Command
        do {
            try rejectUnknownSubcommand(rest, of: commandType)
            let specs = commandType.configuration.specs
            let parsed = try ArgumentParser.parse(rest, specs: specs, environment: environment)
            if parsed[BuiltInFlag.version], let version = commandType.configuration.version {
                output.writeLine(names.joined(separator: " ") + " " + version)
                return .success
            }
            command = try commandType.init(parsed)
            if commandType.configuration.environment.contains(where: { $0.name == EnvironmentVariable.objectStorage.name }) {
                installObjectStorage(environment: environment, logger: logger)
            }
            // Off Swift's cooperative pool: a check may wait on a network share or a bucket.
            try await offPool { try command.validate() }
        } catch {
            return report(error, names: names, to: errorOutput)
        }

        let context = CommandContext(commandPath: names, environment: environment, output: output,
                                     errorOutput: errorOutput, logger: logger, shutdown: shutdown, root: root)
        let task = Task { try await command.run(context) }
        let cancels = commandType.configuration.onShutdown == .cancel
        let token = shutdown.onSignal { signal, count in
            if count > 1 {
                forceExit(signal)
            } else if cancels {
                task.cancel()
            }
        }
        defer { shutdown.removeHandler(token) }
        if cancels, shutdown.signal != nil { task.cancel() }  // a signal that came while parsing

        switch await task.result {
        case .success(let code):
            return code
        case .failure(let error):
            if let signal = shutdown.signal, !(error is UsageError) {
                errorOutput.writeLine(names.joined(separator: " ") + ": interrupted")
                return .stopped(by: signal)
            }
            return report(error, names: names, to: errorOutput)
        }
    }

    /// Serves `s3://` locations in this process from the environment's object storage (made on
    /// first use, so a command that never touches a bucket never reads `~/.aws`).
    static func installObjectStorage(environment: [String: String], logger: Logger) {
        StorageRegistry.register(ObjectMediaStorage { () throws(ObjectStoreError) in
            try ObjectStore(configuration: .fromEnvironment(environment), logger: logger)
        })
    }

    /// Runs `body` on a thread of its own and awaits it.
    private static func offPool(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread { continuation.resume(with: Result { try body() }) }
            thread.name = "splice.validate"
            thread.start()
        }
    }

    /// Follows subcommand names from `root` as far as they go: `["db", "migrate", "--dry-run"]`
    /// gives `[Splice, Db, Migrate]` and `["--dry-run"]`.
    static func resolve(_ words: [String], from root: any Command.Type) -> (path: [any Command.Type], rest: [String]) {
        var path = [root]
        var rest = words[...]
        while let word = rest.first, let next = subcommand(named: word, of: path[path.count - 1]) {
            path.append(next)
            rest.removeFirst()
        }
        return (path, Array(rest))
    }

    private static func subcommand(named name: String, of command: any Command.Type) -> (any Command.Type)? {
        command.configuration.subcommands.first { $0.configuration.name == name }
    }

    /// For a command with subcommands and no positionals, a leading bare word can only be a
    /// mistyped subcommand; say so instead of "unexpected argument".
    private static func rejectUnknownSubcommand(_ rest: [String], of command: any Command.Type) throws {
        let configuration = command.configuration
        guard let word = rest.first, !word.hasPrefix("-"), !configuration.subcommands.isEmpty,
              !configuration.specs.contains(where: { $0.kind == .positional }) else { return }
        let suggestion = Suggestion.closest(to: word, among: configuration.visibleSubcommandNames)
        throw UsageError.unknownSubcommand(word, suggestion: suggestion)
    }

    /// Prints `error` as the runner's conventions say and returns the matching status.
    static func report(_ error: any Error, names: [String], to errorOutput: TextOutput) -> ExitCode {
        let prefix = names.joined(separator: " ")
        if let usage = error as? UsageError {
            errorOutput.writeLine(prefix + ": " + usage.message)
            errorOutput.writeLine("see '" + prefix + " --help'")
            return .usage
        }
        errorOutput.writeLine(prefix + ": " + oneLine(error))
        return .failure
    }

    /// The error's own words (`LocalizedError`, else its `description`), on one line,
    /// with passwords redacted.
    static func oneLine(_ error: any Error) -> String {
        let text = (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
        let line = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
        return Redaction.redactingSecrets(in: line.isEmpty ? String(describing: type(of: error)) : line)
    }
}
