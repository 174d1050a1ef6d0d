/// `splice`: the root of the command tree. New commands are added to `subcommands` below.
struct SpliceCommand: Command {
    /// The version `splice --version` prints; the one place it is written.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        name: "splice",
        abstract: "Segment-parallel video transcoding.",
        discussion: """
            Splice cuts a video into keyframe-aligned segments, encodes them in parallel on worker \
            machines and stitches the pieces back together.
            """,
        version: version,
        subcommands: [
            ProbeCommand.self,
            ExportCommand.self,
            TranscodeCommand.self,
            StitchCommand.self,
            VerifyCommand.self,
            SegmentRemuxCommand.self,
            CoordinatorCommand.self,
            WorkerCommand.self,
            SubmitCommand.self,
            StatusCommand.self,
            JobsCommand.self,
            CancelCommand.self,
            WorkersCommand.self,
            TokensCommand.self,
            KeysCommand.self,
            DBCommand.self,
            HelpCommand.self,
            MediaTaskCommand.self,
        ]
    )

    init(_ arguments: ParsedArguments) {}
}
