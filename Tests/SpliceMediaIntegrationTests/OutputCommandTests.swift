import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// `splice export`, `transcode` and `stitch` run as child processes against outputs they must
/// refuse: they exit 1 by themselves (never by a signal) with one line naming the path, before
/// any work, and leave every file as it was. `-y` replaces an existing output, never an input.
@Suite("Output safety of splice export, transcode and stitch", .timeLimit(.minutes(2)))
struct OutputCommandTests {
    enum Job: String, CaseIterable, Sendable {
        case export, transcode, stitch
    }

    static let clip = Fixtures.ClipSpec(seconds: "1", width: 160, height: 120, frameRate: "25")

    /// What `job` reads in `dir`: a copy of the clip (export, transcode) or a folder of kept
    /// segments (stitch).
    private func input(for job: Job, in dir: URL) async throws -> String {
        let source = dir.appendingPathComponent("in.mp4")
        try FileManager.default.copyItem(atPath: try await Fixtures.clip(Self.clip), toPath: source.path)
        guard job == .stitch else { return source.path }
        let kept = dir.appendingPathComponent("kept")
        let transcoder = Transcoder(options: .init(
            source: source.path, output: dir.appendingPathComponent("first.mp4"), request: TranscodeRequest(
                video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: AudioSettings(codec: .aac), fileType: .mp4,
                segmentDuration: MediaTime(seconds: 1)), jobs: 1, keepSegmentsIn: kept))
        _ = try await transcoder.run()
        try FileManager.default.removeItem(at: dir.appendingPathComponent("first.mp4"))
        try FileManager.default.removeItem(at: source)
        return kept.path
    }

    /// `splice JOB INPUT OUTPUT [flags]`, run in `dir`.
    private func splice(_ job: Job, _ input: String, _ output: String, _ flags: [String] = [],
                        in dir: URL) async throws -> ExternalTool.Output {
        var arguments = [job.rawValue, input, output] + flags
        switch job {
        case .export: arguments += ["--preset", "ultrafast"]
        case .transcode: arguments += ["--preset", "ultrafast", "--segment-seconds", "1", "--jobs", "1"]
        case .stitch: break
        }
        let executable = try SpliceBinary.executable()
        return try await ExternalTool.run(executable: executable, arguments, in: dir)
    }

    /// Checks a refusal: exit status 1 (not a signal), nothing on stdout, and exactly one line on
    /// stderr — no progress bar, so nothing was encoded — that contains each of `fragments`.
    private func expectRefused(_ result: ExternalTool.Output, _ fragments: String...,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.exitedNormally, "ended by signal \(result.status)", sourceLocation: sourceLocation)
        #expect(result.status == 1, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.text.isEmpty, sourceLocation: sourceLocation)
        #expect(result.stderr.split(separator: "\n").count == 1 && fragments.allSatisfy(result.stderr.contains),
                "stderr: \(result.stderr)", sourceLocation: sourceLocation)
    }

    private func contents(_ dir: URL) throws -> Set<String> {
        Set(try FileManager.default.subpathsOfDirectory(atPath: dir.path))
    }

    @Test(arguments: Job.allCases)
    func anOutputThatCannotBeWrittenIsRefusedWithExitOne(job: Job) async throws {
        let dir = Fixtures.temporaryDirectory("unwritable")
        let input = try await input(for: job, in: dir)
        _ = FileManager.default.createFile(atPath: dir.appendingPathComponent("afile").path, contents: Data("x".utf8))
        let before = try contents(dir)
        // /proc takes no new files (whoever runs the tests, root included); a path under a regular
        // file is ENOTDIR; a missing folder must not be created.
        for (output, reason) in [
            ("/proc/splice-test-out.mp4", "cannot create files in the folder '/proc'"),
            ("afile/out.mp4", "\(dir.path)/afile' is not a folder"),
            ("missing/out.mp4", "the folder '\(dir.path)/missing' does not exist"),
        ] {
            for flags in [[], ["-y"]] {
                expectRefused(try await splice(job, input, output, flags, in: dir), "splice \(job): cannot write '\(output)': ",
                              reason)
            }
        }
        #expect(try contents(dir) == before)
        #expect(!FileManager.default.fileExists(atPath: "/proc/splice-test-out.mp4"))
    }

    @Test(arguments: Job.allCases)
    func theInputIsNeverTheOutputEvenWithY(job: Job) async throws {
        let dir = Fixtures.temporaryDirectory("same")
        let input = try await input(for: job, in: dir)
        // The file the output must never replace: the source, or one of the kept segments.
        let victim = job == .stitch ? input + "/segment-00000.splseg" : input
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("link.mp4").path,
                                                   withDestinationPath: victim)
        #expect(link(victim, dir.appendingPathComponent("hard.mp4").path) == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: victim))
        let before = try contents(dir)
        for (output, flags) in [(victim, []), (victim, ["-y"]), ("link.mp4", ["-y"]), ("hard.mp4", ["--overwrite"])] {
            expectRefused(try await splice(job, input, output, flags, in: dir), "the output '\(output)' is the input")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == bytes)
        #expect(try contents(dir) == before)
    }

    @Test(arguments: Job.allCases)
    func anExistingOutputIsKeptWithoutYAndReplacedWithIt(job: Job) async throws {
        let dir = Fixtures.temporaryDirectory("existing")
        let input = try await input(for: job, in: dir)
        let output = dir.appendingPathComponent("out.mp4")
        let precious = Data("someone's earlier work".utf8)
        try precious.write(to: output)
        let before = try contents(dir)
        expectRefused(try await splice(job, input, "out.mp4", in: dir),
                      "'out.mp4' already exists; pass -y (--overwrite) to replace it, or choose another name")
        #expect(try Data(contentsOf: output) == precious)
        #expect(try contents(dir) == before)

        let replaced = try await splice(job, input, "out.mp4", [job == .transcode ? "--overwrite" : "-y"], in: dir)
        #expect(replaced.exitedNormally && replaced.status == 0, "stderr: \(replaced.stderr)")
        #expect(replaced.text.hasPrefix("wrote out.mp4: "))
        #expect(try await Probe(output.path, countFrames: true).first("video")?.readFrames == 25)
        #expect(try contents(dir) == before)
    }
}
