import Foundation
import SpliceWire

/// `splice workers [--json]`: the workers the coordinator knows; `splice workers enroll KEY` and
/// `splice workers revoke KEY` admit and refuse worker keys.
struct WorkersCommand: ClientCommand {
    static let json = Flag("json", help: "Print the workers as JSON.")

    static let configuration = CommandConfiguration(
        name: "workers", abstract: "List the cluster's workers, or enroll and revoke their keys.",
        arguments: [json] + ClientOptions.arguments,
        subcommands: [WorkersEnrollCommand.self, WorkersRevokeCommand.self, WorkersPruneCommand.self,
                      JoinTokenCommand.self])

    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        json = arguments[Self.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let workers = try await client.withClient { try await $0.workers() }
        if json {
            try context.output.writeJSON(workers)
        } else if workers.isEmpty {
            context.output.writeLine("no workers; start `splice worker` on a machine (and enroll its key when the "
                                     + "coordinator uses CURVE)")
        } else {
            for line in Self.table(workers).lines { context.output.writeLine(line) }
        }
        return .success
    }

    /// One row per worker: key, name, whether enrolled and connected, the worker-protocol version
    /// its session speaks, slots, the cores it may use and the encoder threads per slot, running
    /// segments, its operations endpoint, last seen, and a quarantine (how long it lasts, and the
    /// refusal behind it) when there is one.
    static func table(_ workers: [WorkerInfo]) -> TextTable {
        var table = TextTable(headers: ["KEY", "NAME", "ENROLLED", "CONNECTED", "PROTOCOL", "SLOTS", "CORES",
                                        "THREADS/SLOT", "RUNNING", "MODE", "IN/OUT", "METRICS", "LAST SEEN (UTC)",
                                        "QUARANTINE"])
        for worker in workers {
            table.rows.append([
                worker.publicKey.z85, worker.name ?? "-", worker.enrolled ? "yes" : "revoked",
                worker.connected ? "yes" : "no", worker.protocolVersion.map(String.init) ?? "-",
                worker.slots.map(String.init) ?? "-",
                worker.usableCores.map(String.init) ?? "-", worker.threadsPerSlot.map(String.init) ?? "-",
                String(worker.running), worker.storage?.rawValue ?? "-", transferred(worker),
                worker.metricsEndpoint ?? "-", ClusterText.time(millisecondsSinceEpoch: worker.lastSeenAtMilliseconds),
                quarantine(worker),
            ])
        }
        return table
    }

    /// `"42s: spool-unwritable: …"`, or `-`.
    /// A transfer worker's bytes in and out, `12.4 MB/3.1 MB` (10^6 bytes); `-` for the others.
    static func transferred(_ worker: WorkerInfo) -> String {
        guard let bytesIn = worker.bytesIn, let bytesOut = worker.bytesOut else { return "-" }
        func megabytes(_ bytes: Int64) -> String {
            let tenths = (bytes + 50_000) / 100_000
            return "\(tenths / 10).\(tenths % 10) MB"
        }
        return megabytes(bytesIn) + "/" + megabytes(bytesOut)
    }

    static func quarantine(_ worker: WorkerInfo) -> String {
        guard let remaining = worker.quarantineRemainingMilliseconds else { return "-" }
        let seconds = (remaining + 999) / 1000
        return "\(seconds)s" + (worker.quarantineReason.map { ": \($0)" } ?? "")
    }
}

/// The KEY argument of `workers enroll` and `workers revoke`: Z85 text or a `.pub` file.
private let workerKey = Positional<String>("key",
    help: "The worker's public key: 40 characters of Z85, or the .pub file `splice keys generate` wrote.",
    acceptsLeadingDash: true) { $0 }  // Z85 keys can start with '-'.

/// `splice workers enroll KEY [--name NAME]`.
struct WorkersEnrollCommand: ClientCommand {
    static let key = workerKey
    static let name = Option<String>("name", valueName: "label", help: "A name to show in `splice workers`.")

    static let configuration = CommandConfiguration(
        name: "enroll", abstract: "Admit a worker's key on the coordinator.",
        discussion: """
            The worker can connect from then on. A revoked key cannot be enrolled again: give that \
            worker a new key.
            """,
        arguments: [key, name] + ClientOptions.arguments)

    let key: CurvePublicKey
    let name: String?
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        key = try ClientOptions.publicKey(try arguments.value(Self.key), flag: "<key>")
        name = arguments[Self.name]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let changed = try await client.withClient { try await $0.enroll(key, name: name) }
        context.output.writeLine("enrolled worker key \(changed.publicKey)" + (name.map { " (\($0))" } ?? ""))
        return .success
    }
}

/// `splice workers revoke KEY`.
struct WorkersRevokeCommand: ClientCommand {
    static let key = workerKey

    static let configuration = CommandConfiguration(
        name: "revoke", abstract: "Refuse a worker's key from now on and end its live sessions.",
        discussion: "The segments it was encoding go back to the queue for other workers.",
        arguments: [key] + ClientOptions.arguments)

    let key: CurvePublicKey
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        key = try ClientOptions.publicKey(try arguments.value(Self.key), flag: "<key>")
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let changed = try await client.withClient { try await $0.revoke(key) }
        let sessions = changed.sessionsClosed == 1 ? "1 live session" : "\(changed.sessionsClosed) live sessions"
        context.output.writeLine("revoked worker key \(changed.publicKey); closed \(sessions)")
        return .success
    }
}

/// `splice workers prune --not-seen 24h [--dry-run]`.
struct WorkersPruneCommand: ClientCommand {
    static let notSeen = Option<Int64>(
        "not-seen", valueName: "duration", help: "Revoke the keys of workers not heard from for this long: 24h, 7d…",
        isRequired: true, expected: "a duration like 24h, 7d or 3600s") { TokensCreateCommand.seconds($0) }
    static let dryRun = Flag("dry-run", help: "Only list the workers that would be revoked.")

    static let configuration = CommandConfiguration(
        name: "prune", abstract: "Revoke the keys of workers long gone (pods come and go).",
        discussion: """
            A worker counts as seen while it is connected; one that never connected counts from its \
            enrollment. Revoked keys stay refused: a worker that comes back joins again with a join token \
            (and a new key).
            """,
        arguments: [notSeen, dryRun] + ClientOptions.arguments)

    let notSeen: Int64
    let dryRun: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        notSeen = try arguments.value(Self.notSeen)
        dryRun = arguments[Self.dryRun]
        client = try ClientOptions(arguments)
    }

    func validate() throws {
        guard notSeen >= 60 else { throw UsageError("--not-seen must be at least a minute (60s); got \(notSeen)s") }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let pruned = try await client.withClient {
            try await $0.pruneWorkers(PruneWorkers(notSeenSeconds: notSeen, dryRun: dryRun))
        }
        let verb = dryRun ? "would revoke" : "revoked"
        for worker in pruned.workers {
            context.output.writeLine("\(verb) worker key \(worker.publicKey) (\(worker.name)), last seen "
                + ClusterText.time(millisecondsSinceEpoch: worker.lastSeenAtMilliseconds) + " UTC")
        }
        context.output.writeLine("\(verb) \(pruned.workers.count) worker key" + (pruned.workers.count == 1 ? "" : "s"))
        return .success
    }
}

/// `splice workers join-token [list]`, `create`, `revoke`.
struct JoinTokenCommand: ClientCommand {
    static let json = Flag("json", help: "Print the join tokens as JSON.")

    static let configuration = CommandConfiguration(
        name: "join-token", abstract: "List worker join tokens, or create and revoke them.",
        discussion: """
            A worker started with `--join-token TOKEN` (SPLICE_JOIN_TOKEN) presents it once with its own \
            public key and the coordinator enrolls that key: workers need no admin key and no enrollment by \
            hand. The coordinator keeps only a token's SHA-256: it is printed once, when it is created.
            """,
        arguments: [json] + ClientOptions.arguments,
        subcommands: [JoinTokenCreateCommand.self, JoinTokenListCommand.self, JoinTokenRevokeCommand.self])

    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        json = arguments[Self.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        try await JoinTokenListCommand.list(client: client, json: json, context: context)
    }
}

/// `splice workers join-token create [--uses N] [--ttl 1h] [--name NAME]`.
struct JoinTokenCreateCommand: ClientCommand {
    static let uses = Option<Int>("uses", valueName: "n", help: "How many workers it may enroll.", default: 1)
    static let ttl = Option<Int64>(
        "ttl", valueName: "duration", help: "How long it lasts: 1h, 30m, 7d, 3600s.", default: 3600,
        expected: "a duration like 1h, 30m, 7d or 3600s") { TokensCreateCommand.seconds($0) }
    static let name = Option<String>(
        "name", valueName: "name", help: "A name to list and revoke it by (default: join- and the time).")

    static let configuration = CommandConfiguration(
        name: "create", abstract: "Create a worker join token and print it (once).",
        discussion: """
            Prints the token alone on standard output — store it now (a Kubernetes Secret: \
            Deploy/kubernetes/secrets.yaml): the coordinator keeps only its SHA-256.
            """,
        arguments: [uses, ttl, name] + ClientOptions.arguments)

    let request: CreateJoinToken
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        let seconds = Int64(Date().timeIntervalSince1970)
        request = CreateJoinToken(name: arguments[Self.name] ?? "join-\(seconds)", uses: try arguments.value(Self.uses),
                                  ttlSeconds: try arguments.value(Self.ttl))
        client = try ClientOptions(arguments)
    }

    func validate() throws {
        guard (1...1_000_000).contains(request.uses) else {
            throw UsageError("--uses must be from 1 to 1000000; got \(request.uses)")
        }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let created = try await client.withClient { try await $0.createJoinToken(request) }
        context.errorOutput.writeLine("join token \(created.info.name) created for \(created.info.uses) worker"
            + (created.info.uses == 1 ? "" : "s") + ", until "
            + ClusterText.time(millisecondsSinceEpoch: created.info.expiresAtMilliseconds)
            + " UTC; it is shown once — store it now")
        context.output.writeLine(created.token ?? "")
        return .success
    }
}

/// `splice workers join-token list [--json]`.
struct JoinTokenListCommand: ClientCommand {
    static let configuration = CommandConfiguration(
        name: "list", abstract: "List the live join tokens (never the tokens themselves).",
        arguments: [JoinTokenCommand.json] + ClientOptions.arguments)

    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        json = arguments[JoinTokenCommand.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        try await Self.list(client: client, json: json, context: context)
    }

    static func list(client: ClientOptions, json: Bool, context: CommandContext) async throws -> ExitCode {
        let tokens = try await client.withClient { try await $0.joinTokens() }
        if json {
            try context.output.writeJSON(tokens)
        } else if tokens.isEmpty {
            context.output.writeLine("no join tokens; `splice workers join-token create --uses N` makes one")
        } else {
            var table = TextTable(headers: ["NAME", "USES LEFT", "CREATED (UTC)", "EXPIRES (UTC)"])
            for token in tokens {
                table.rows.append([
                    token.name, "\(token.usesLeft)/\(token.uses)",
                    ClusterText.time(millisecondsSinceEpoch: token.createdAtMilliseconds),
                    ClusterText.time(millisecondsSinceEpoch: token.expiresAtMilliseconds),
                ])
            }
            for line in table.lines { context.output.writeLine(line) }
        }
        return .success
    }
}

/// `splice workers join-token revoke NAME`.
struct JoinTokenRevokeCommand: ClientCommand {
    static let name = Positional<String>("name", help: "The join token's name.")

    static let configuration = CommandConfiguration(
        name: "revoke", abstract: "Refuse a join token from now on (workers it enrolled stay enrolled).",
        arguments: [name] + ClientOptions.arguments)

    let name: String
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        name = try arguments.value(Self.name)
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let revoked = try await client.withClient { try await $0.revokeJoinToken(named: name) }
        context.output.writeLine("revoked join token \(revoked.info.name) (\(revoked.info.usesLeft) uses were left)")
        return .success
    }
}
