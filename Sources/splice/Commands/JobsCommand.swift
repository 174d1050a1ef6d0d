import SpliceCore
import SpliceWire

/// `splice jobs [--state S] [--limit N] [--json]`: recent jobs, newest first.
struct JobsCommand: ClientCommand {
    static let state = Option<JobState>("state", valueName: "state", help: "Only jobs in this state.")
    static let limit = Option<Int>("limit", valueName: "count", help: "At most this many jobs, from 1 to 1000.",
                                   default: 50)
    static let json = Flag("json", help: "Print the jobs as JSON.")

    static let configuration = CommandConfiguration(
        name: "jobs", abstract: "List recent jobs, newest first.",
        arguments: [state, limit, json] + ClientOptions.arguments,
        subcommands: [JobsPruneCommand.self])

    let state: JobState?
    let limit: Int
    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        state = arguments[Self.state]
        limit = try arguments.value(Self.limit)
        json = arguments[Self.json]
        client = try ClientOptions(arguments)
    }

    func validate() throws {
        try client.validate()
        guard (1...1000).contains(limit) else { throw UsageError("--limit must be from 1 to 1000; got \(limit)") }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let jobs = try await client.withClient { try await $0.jobs(state: state, limit: limit) }
        if json {
            try context.output.writeJSON(jobs)
        } else if jobs.isEmpty {
            context.output.writeLine(state.map { "no \($0.rawValue) jobs" } ?? "no jobs")
        } else {
            for line in Self.table(jobs).lines { context.output.writeLine(line) }
        }
        return .success
    }

    /// One row per job: id, state, segments, percent, submission time, output.
    static func table(_ jobs: [JobStatus]) -> TextTable {
        var table = TextTable(headers: ["JOB", "STATE", "SEGMENTS", "DONE", "SUBMITTED (UTC)", "OUTPUT"])
        for job in jobs {
            let segments = job.segmentsTotal.map { "\(job.segmentsDone)/\($0)" } ?? "-"
            table.rows.append([
                job.job.description, job.state.rawValue, segments, "\(StatusCommand.percent(job.fraction))%",
                ClusterText.time(millisecondsSinceEpoch: job.submittedAtMilliseconds), job.output,
            ])
        }
        return table
    }
}

/// `splice jobs prune --finished-before 30d [--dry-run]`.
struct JobsPruneCommand: ClientCommand {
    static let finishedBefore = Option<Int64>(
        "finished-before", valueName: "duration",
        help: "Delete jobs that finished (succeeded, failed or cancelled) longer ago than this: 30d, 12h, 3600s…",
        isRequired: true, expected: "a duration like 30d, 12h or 3600s") { TokensCreateCommand.seconds($0) }
    static let dryRun = Flag("dry-run", help: "Only count what would be deleted.")

    static let configuration = CommandConfiguration(
        name: "prune", abstract: "Delete old finished jobs with their segments, events and spool files.",
        discussion: """
            The active coordinator deletes them in batches of 1,000 jobs a transaction, so no table is locked \
            for long; a job still running, or finished since the cutoff, is never touched. The coordinator's \
            --retention does the same every hour.
            """,
        arguments: [finishedBefore, dryRun] + ClientOptions.arguments)

    let finishedBefore: Int64
    let dryRun: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        finishedBefore = try arguments.value(Self.finishedBefore)
        dryRun = arguments[Self.dryRun]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let pruned = try await client.withClient {
            try await $0.pruneJobs(PruneJobs(finishedBeforeSeconds: finishedBefore, dryRun: dryRun))
        }
        context.output.writeLine((dryRun ? "would delete " : "deleted ") + "\(pruned.jobs) jobs, \(pruned.segments) "
            + "segments, \(pruned.events) events and \(pruned.webhookEvents) webhook events")
        return .success
    }
}
