import SpliceCore
import SpliceWire

/// `splice cancel JOB`: cancels a job; its running segments stop and their partial files go.
struct CancelCommand: ClientCommand {
    static let job = Positional<JobID>(
        "job", help: "The job id `splice submit` printed.", expected: "a job id (the UUID `splice submit` printed)"
    ) { JobID($0) }

    static let configuration = CommandConfiguration(
        name: "cancel", abstract: "Cancel a job.",
        discussion: "Safe to repeat. A job that has already finished keeps its state.",
        arguments: [job] + ClientOptions.arguments)

    let job: JobID
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        job = try arguments.value(Self.job)
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let answer = try await client.withClient { try await $0.cancel(job) }
        context.output.writeLine(Self.line(for: answer))
        return .success
    }

    /// `job X cancelled`, or what the job had already become.
    static func line(for answer: JobCancelled) -> String {
        guard answer.state != .cancelled else { return "job \(answer.job) cancelled" }
        return "job \(answer.job) had already finished (\(answer.state.rawValue)); nothing to cancel"
    }
}
