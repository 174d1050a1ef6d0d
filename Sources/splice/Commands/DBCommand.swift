import SpliceStore

/// `splice db migrate|status [--database URL]`: the job database's schema.
struct DBCommand: Command {
    static let configuration = CommandConfiguration(
        name: "db", abstract: "Manage the job database's schema.",
        discussion: """
            The coordinator migrates the database itself when it starts; these commands are for \
            operators who want to do it (or check it) beforehand.
            """,
        subcommands: [DBMigrateCommand.self, DBStatusCommand.self])

    init(_ arguments: ParsedArguments) {}

    /// `--database`, shared by both subcommands.
    static let database = Option<String>("database", valueName: "url",
        help: "PostgreSQL URL (postgresql://user:password@host:5432/splice) or key=value string.",
        environment: "SPLICE_DATABASE_URL", isRequired: true)

    /// Parses the `--database` value; a malformed one is a usage error whose text never holds the password.
    static func connection(_ arguments: ParsedArguments) throws -> ConnectionConfiguration {
        do {
            return try ConnectionConfiguration(try arguments.value(database))
        } catch let error as StoreError {
            throw UsageError("--database: " + error.message)
        }
    }
}

/// `splice db migrate`: applies the migrations this binary carries that the database lacks.
struct DBMigrateCommand: Command {
    static let configuration = CommandConfiguration(
        name: "migrate", abstract: "Apply pending migrations.",
        discussion: """
            Safe to run any number of times, and from several machines at once: each migration is \
            applied once.
            """,
        arguments: [DBCommand.database])

    let database: ConnectionConfiguration

    init(_ arguments: ParsedArguments) throws {
        database = try DBCommand.connection(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let migrator = try Migrator(configuration: database)
        let applied = try await migrator.migrate()
        context.output.writeLine("database: \(database)")
        for migration in applied {
            context.output.writeLine("applied \(Self.version(migration.version)) \(migration.name)")
        }
        let total = migrator.migrations.count
        context.output.writeLine(applied.isEmpty
            ? "schema is up to date (\(total) migrations); nothing to apply"
            : "schema is up to date (\(total) migrations); applied \(applied.count) now")
        return .success
    }

    /// `0001`.
    static func version(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// `splice db status`: where the schema stands; exits 1 when the database cannot be used with
/// this binary (newer than the code, or a landed migration edited).
struct DBStatusCommand: Command {
    static let configuration = CommandConfiguration(
        name: "status", abstract: "Show which migrations are applied and which are pending.",
        arguments: [DBCommand.database])

    let database: ConnectionConfiguration

    init(_ arguments: ParsedArguments) throws {
        database = try DBCommand.connection(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let status = try await Migrator(configuration: database).status()
        for line in status.description.split(separator: "\n", omittingEmptySubsequences: false) {
            context.output.writeLine(String(line))
        }
        return status.problem == nil ? .success : .failure
    }
}
