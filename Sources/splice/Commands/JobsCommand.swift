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
        arguments: [state, limit, json] + ClientOptions.arguments)

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
