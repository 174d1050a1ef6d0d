import SpliceWire

/// `splice workers [--json]`: the workers the coordinator knows; `splice workers enroll KEY` and
/// `splice workers revoke KEY` admit and refuse worker keys.
struct WorkersCommand: ClientCommand {
    static let json = Flag("json", help: "Print the workers as JSON.")

    static let configuration = CommandConfiguration(
        name: "workers", abstract: "List the cluster's workers, or enroll and revoke their keys.",
        arguments: [json] + ClientOptions.arguments,
        subcommands: [WorkersEnrollCommand.self, WorkersRevokeCommand.self])

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
