import SpliceLog

/// One `splice` command: a static description (name, help, argument table, subcommands), an init
/// from parsed arguments, `validate()` and `run(_:)`. The runner calls them in that order.
///
///     struct CancelCommand: Command {
///         static let job = Positional<String>("job", help: "The job to cancel.")
///         static let configuration = CommandConfiguration(
///             name: "cancel", abstract: "Cancel a job.", arguments: [job] + CoordinatorOptions.arguments)
///
///         let job: String
///         let coordinator: CoordinatorOptions
///
///         init(_ arguments: ParsedArguments) throws {
///             job = try arguments.value(Self.job)
///             coordinator = try CoordinatorOptions(arguments)
///         }
///
///         func run(_ context: CommandContext) async throws -> ExitCode { … return .success }
///     }
///
/// A command that only groups subcommands (`splice db`) keeps the default `run`, which reports the
/// missing subcommand. A command can both run and have subcommands (`splice workers` lists,
/// `splice workers enroll KEY` enrolls).
protocol Command: Sendable {
    static var configuration: CommandConfiguration { get }

    /// Reads the parsed arguments into the command's properties.
    init(_ arguments: ParsedArguments) throws

    /// Checks combinations the table cannot express; throws ``UsageError``. Runs before `run`.
    func validate() throws

    /// Does the work. Throwing ``UsageError`` exits 64; any other error prints its one-line
    /// description and exits 1 (or 128 + signal number after SIGINT/SIGTERM).
    func run(_ context: CommandContext) async throws -> ExitCode
}

extension Command {
    func validate() throws {}

    func run(_ context: CommandContext) async throws -> ExitCode {
        throw UsageError.missingSubcommand(of: Self.self)
    }
}

/// What a command declares about itself.
///
/// Read it through a closure (`types.map { $0.configuration.name }`), not a key path
/// (`\.configuration.name`): a key path through a metatype crashes the Swift 6.3 compiler.
struct CommandConfiguration: Sendable {
    /// The word that selects the command: `export`, `migrate`.
    var name: String
    /// One line for the command list and the top of `--help`.
    var abstract: String
    /// Further paragraphs for `--help`.
    var discussion: String
    /// Set on the root command: `--version` prints `name version`.
    var version: String?
    /// The argument table: options, flags and positionals (in order), shared groups appended.
    var arguments: [any ArgumentDeclaration]
    var subcommands: [any Command.Type]
    /// Left out of help listings (test or diagnostic commands).
    var isHidden: Bool
    /// What the runner does on the first SIGINT/SIGTERM while this command runs.
    var onShutdown: ShutdownBehavior
    /// Environment variables the command reads that no option stands for (help lists them with
    /// the options' own variables).
    var environment: [EnvironmentVariable]

    init(name: String, abstract: String, discussion: String = "", version: String? = nil,
         arguments: [any ArgumentDeclaration] = [], subcommands: [any Command.Type] = [], isHidden: Bool = false,
         onShutdown: ShutdownBehavior = .cancel, environment: [EnvironmentVariable] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.version = version
        self.arguments = arguments
        self.subcommands = subcommands
        self.isHidden = isHidden
        self.onShutdown = onShutdown
        self.environment = environment
    }

    /// The declared arguments, then the built-in flags: `--version` where a version is set and
    /// `-h, --help` everywhere. The parser and the help text both read this list.
    var specs: [ArgumentSpec] {
        arguments.map(\.spec) + (version == nil ? [] : [BuiltInFlag.version.spec]) + [BuiltInFlag.help.spec]
    }

    /// The names of the subcommands listed in help (for messages and suggestions).
    var visibleSubcommandNames: [String] {
        subcommands.filter { !$0.configuration.isHidden }.map { $0.configuration.name }
    }
}

/// An environment variable a command reads without an option for it.
struct EnvironmentVariable: Sendable {
    var name: String
    var help: String

    /// FFmpeg's own log lines, read by every command that opens media.
    static let ffmpegLog = EnvironmentVariable(
        name: "SPLICE_FFMPEG_LOG",
        help: "FFmpeg's own messages on standard error: error, warning, info, verbose or debug (default: none).")

    /// Object storage for `s3://BUCKET/KEY` inputs and outputs, read the way the AWS tools read
    /// it. A command that lists it has the storage set up before it validates its arguments
    /// (``CommandRunner``); others (`worker`) never touch a bucket.
    static let objectStorage = EnvironmentVariable(
        name: "AWS_*",
        help: "s3:// inputs and outputs: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), or "
            + "AWS_PROFILE with ~/.aws; AWS_REGION; AWS_ENDPOINT_URL for S3-compatible services (docs/deploy.md).")
}

/// Flags the runner answers itself, for every command.
enum BuiltInFlag {
    /// Answered before parsing, so `splice export --help` works with arguments missing.
    static let help = Flag("help", short: "h", help: "Show help for this command.")
    /// Answered after parsing, on the root command only.
    static let version = Flag("version", help: "Show the version and exit.")
}

/// How a running command learns that the user or the service manager wants it to stop.
enum ShutdownBehavior: Sendable {
    /// Cancel the command's task (cooperative cancellation): right for commands that do a job
    /// and stop — `export` cancels its session and removes the partial file.
    case cancel
    /// Only notify ``CommandContext/shutdown``: right for services that drain gracefully on
    /// SIGTERM (`coordinator`, `worker`) and decide their own exit status.
    case notify
}

/// What a running command is given besides its arguments.
struct CommandContext: Sendable {
    /// `["splice", "workers", "enroll"]`.
    var commandPath: [String]
    var environment: [String: String]
    /// Results (stdout).
    var output: TextOutput
    /// Progress and messages for people (stderr).
    var errorOutput: TextOutput
    /// Key=value lines on stderr; level from `SPLICE_LOG_LEVEL`.
    var logger: Logger
    /// SIGINT/SIGTERM, to poll or await.
    var shutdown: ShutdownSignal
    /// The root of the command tree (for `splice help`).
    var root: any Command.Type
}

/// The process exit status.
struct ExitCode: Sendable, Equatable, CustomStringConvertible {
    var rawValue: Int32

    init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    static let success = ExitCode(0)
    /// A runtime failure; the cause was printed on one line.
    static let failure = ExitCode(1)
    /// The command line was wrong (EX_USAGE).
    static let usage = ExitCode(64)
    /// Stopped by Ctrl-C (128 + SIGINT).
    static let interrupted = ExitCode(130)

    /// The shell's convention for "stopped by `signal`": 128 + its number.
    static func stopped(by signal: Int32) -> ExitCode {
        ExitCode(128 + signal)
    }

    var description: String { String(rawValue) }
}
