import SpliceLog
import SpliceMedia
import Synchronization

@testable import splice

// A command tree shaped like the real one will be (export flags shared as a group, a `db` group,
// `workers` that both runs and has subcommands), used to exercise the framework.

enum Preset: String, CaseIterable, ArgumentValue {
    case ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow
}

/// The flags `export`, `transcode` and `submit` will share.
struct ExportFlags: OptionGroup {
    static let width = Option<Int>("width", short: "w", valueName: "pixels", help: "Output width in pixels.")
    static let preset = Option<Preset>("preset", help: "Encoder speed preset.", default: .medium)
    static let start = Option<MediaTime>("start", valueName: "time", help: "Where the output begins.",
                                         expected: "a time like 1.5 or 00:01:02.5") { MediaTime(parsing: $0) }
    static let faststart = Flag("faststart", help: "Put the index at the front of the file.")
    static let metadata = Option<String>("metadata", valueName: "key=value", help: "A global tag.",
                                         isRepeatable: true)
    static let arguments: [any ArgumentDeclaration] = [width, preset, start, faststart, metadata]

    var width: Int?
    var preset: Preset
    var start: MediaTime?
    var faststart: Bool
    var metadata: [String]

    init(_ arguments: ParsedArguments) throws {
        width = arguments[Self.width]
        preset = try arguments.value(Self.preset)
        start = arguments[Self.start]
        faststart = arguments[Self.faststart]
        metadata = arguments.values(Self.metadata)
    }
}

struct FakeExport: Command {
    static let input = Positional<String>("input", help: "The source file or URL.")
    static let output = Positional<String>("output", help: "Where to write.", isRequired: false)
    static let configuration = CommandConfiguration(
        name: "export", abstract: "Transcode a file on this machine.",
        discussion: "Writes OUTPUT from INPUT with the given settings.",
        arguments: [input, output] + ExportFlags.arguments)

    let input: String
    let output: String?
    let flags: ExportFlags

    init(_ arguments: ParsedArguments) throws {
        input = try arguments.value(Self.input)
        output = arguments[Self.output]
        flags = try ExportFlags(arguments)
    }

    func validate() throws {
        if let width = flags.width, width <= 0 {
            throw UsageError("--width must be positive; got " + String(width))
        }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.output.writeLine("export " + input + " preset=" + flags.preset.rawValue)
        return .success
    }
}

struct FakeDatabase: Command {
    static let configuration = CommandConfiguration(
        name: "db", abstract: "Manage the job database.", subcommands: [FakeMigrate.self])

    init(_ arguments: ParsedArguments) {}
}

struct FakeMigrate: Command {
    static let database = Option<String>("database", valueName: "url", help: "PostgreSQL connection URL.",
                                         environment: "SPLICE_DATABASE_URL", isRequired: true)
    static let dryRun = Flag("dry-run", help: "Print the migrations without applying them.",
                             environment: "SPLICE_DRY_RUN")
    static let configuration = CommandConfiguration(
        name: "migrate", abstract: "Apply pending migrations.", arguments: [database, dryRun])

    let database: String
    let dryRun: Bool

    init(_ arguments: ParsedArguments) throws {
        database = try arguments.value(Self.database)
        dryRun = arguments[Self.dryRun]
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.output.writeLine("migrate " + database + " dry-run=" + String(dryRun))
        return .success
    }
}

struct FakeWorkers: Command {
    static let coordinator = Option<String>("coordinator", valueName: "endpoint", help: "The coordinator's API.",
                                            default: "tcp://127.0.0.1:7451", environment: "SPLICE_COORDINATOR")
    static let configuration = CommandConfiguration(
        name: "workers", abstract: "List workers.", arguments: [coordinator], subcommands: [FakeEnroll.self])

    let coordinator: String

    init(_ arguments: ParsedArguments) throws {
        coordinator = try arguments.value(Self.coordinator)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.output.writeLine("workers at " + coordinator)
        return .success
    }
}

struct FakeEnroll: Command {
    static let keys = Positional<String>("key", help: "Public keys to admit.", isRepeatable: true)
    static let configuration = CommandConfiguration(name: "enroll", abstract: "Admit workers.", arguments: [keys])

    let keys: [String]

    init(_ arguments: ParsedArguments) {
        keys = arguments.values(Self.keys)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.output.writeLine("enroll " + keys.joined(separator: ","))
        return .success
    }
}

/// An error with a password in it and more than one line, as a careless library might write.
struct LeakyError: Error, CustomStringConvertible {
    var description: String { "cannot connect to postgres://splice:hunter2@db/splice\n  connection refused" }
}

struct FakeFail: Command {
    static let configuration = CommandConfiguration(name: "fail", abstract: "Always fails.", isHidden: true)

    init(_ arguments: ParsedArguments) {}

    func run(_ context: CommandContext) async throws -> ExitCode {
        throw LeakyError()
    }
}

/// Sleeps until cancelled (the default shutdown behaviour cancels it).
struct FakeWait: Command {
    static let configuration = CommandConfiguration(name: "wait", abstract: "Waits.", isHidden: true)

    init(_ arguments: ParsedArguments) {}

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.errorOutput.writeLine("waiting")
        try await Task.sleep(for: .seconds(10))
        return .success
    }
}

/// A service: on a signal it drains and exits 0 by itself; a second signal forces the exit.
struct FakeDrain: Command {
    static let configuration = CommandConfiguration(name: "drain", abstract: "Drains.", isHidden: true,
                                                    onShutdown: .notify)

    init(_ arguments: ParsedArguments) {}

    func run(_ context: CommandContext) async throws -> ExitCode {
        context.errorOutput.writeLine("waiting")
        let signal = await context.shutdown.wait()
        context.output.writeLine("draining after signal " + String(signal ?? 0) + " cancelled="
                                     + String(Task.isCancelled))
        while context.shutdown.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        return .success
    }
}

struct FakeRoot: Command {
    static let configuration = CommandConfiguration(
        name: "splice", abstract: "Test tree.", version: SpliceCommand.version,
        subcommands: [HelpCommand.self, FakeExport.self, FakeDatabase.self, FakeWorkers.self, FakeFail.self,
                      FakeWait.self, FakeDrain.self])

    init(_ arguments: ParsedArguments) {}
}

// MARK: - Harness

/// Text written to a ``TextOutput``.
final class Captured: Sendable {
    private let text = Mutex("")
    let isTerminal: Bool
    let columns: Int

    init(isTerminal: Bool = false, columns: Int = 80) {
        self.isTerminal = isTerminal
        self.columns = columns
    }

    var output: TextOutput {
        TextOutput(isTerminal: isTerminal, columns: columns) { [self] in append($0) }
    }

    var value: String { text.withLock { $0 } }

    private func append(_ string: String) {
        text.withLock { $0 += string }
    }

    /// Waits (up to two seconds) until `needle` has been written.
    func waitFor(_ needle: String) async throws {
        for _ in 0..<400 where !value.contains(needle) {
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

struct CLIResult {
    var code: ExitCode
    var stdout: String
    var stderr: String
}

/// Runs `arguments` against `root` with captured streams and no real signals.
func runCLI(_ arguments: [String], environment: [String: String] = [:], root: any Command.Type = FakeRoot.self,
            shutdown: ShutdownSignal = ShutdownSignal(), stderr: Captured = Captured(),
            forceExit: @escaping @Sendable (Int32) -> Void = { _ in }) async -> CLIResult {
    let stdout = Captured()
    let code = await CommandRunner.run(root: root, arguments: arguments, environment: environment,
                                       output: stdout.output, errorOutput: stderr.output,
                                       logger: Logger(level: .error), shutdown: shutdown, forceExit: forceExit)
    return CLIResult(code: code, stdout: stdout.value, stderr: stderr.value)
}

/// The usage error `words` produce against `command`'s table, or `nil` when they parse.
func usageError<C: Command>(_ words: [String], for command: C.Type, environment: [String: String] = [:]) -> String? {
    do {
        let parsed = try ArgumentParser.parse(words, specs: C.configuration.specs, environment: environment)
        try C(parsed).validate()
        return nil
    } catch let error as UsageError {
        return error.message
    } catch {
        return "not a usage error: " + String(describing: error)
    }
}

/// Parses `words` for `command`; fails the test on a usage error.
func parse<C: Command>(_ words: [String], as command: C.Type, environment: [String: String] = [:]) throws -> C {
    try C(ArgumentParser.parse(words, specs: C.configuration.specs, environment: environment))
}
