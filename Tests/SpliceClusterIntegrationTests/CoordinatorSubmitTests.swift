import SpliceCore
import Foundation
import SpliceJSON
import SpliceMedia
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

// What the coordinator refuses at SUBMIT, and how a job whose media steps fail (or crash) fails
// alone: real sockets, a real store, real files.

@Suite("Submitting and failing jobs safely", .timeLimit(.minutes(4)))
struct CoordinatorSubmitTests {
    /// The ERROR a SUBMIT got, or a failure when it was accepted.
    static func refusal(_ reply: APIReply) throws -> APIError {
        guard case .error(let error) = reply else { throw TestFailure("SUBMIT was accepted: \(reply)") }
        return error
    }

    @Test("a job that could never finish is refused at SUBMIT, in well under a second, with the path in the reason")
    func refusedAtSubmit() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let folder = Fixtures.temporaryDirectory("out")
        let existing = folder.appendingPathComponent("existing.mp4").path
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
        let link = folder.appendingPathComponent("link-to-source.mp4").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: source)
        let cases: [(input: String, output: String, expected: String)] = [
            (folder.appendingPathComponent("missing.mp4").path, folder.appendingPathComponent("a.mp4").path, "missing.mp4"),
            (source, folder.appendingPathComponent("no-such-folder/a.mp4").path, "no-such-folder"),
            (source, "/proc/splice-test.mp4", "/proc"),
            (source, existing + "/a.mp4", "existing.mp4"),
            (source, link, "link-to-source.mp4"),
            (source, existing, "existing.mp4"),
        ]
        for (input, output, expected) in cases {
            let started = ContinuousClock.now
            let error = try Self.refusal(try await client.submitting(input, to: output))
            // Refused in SUBMIT's own reply (well under a second on a quiet machine); the bound only
            // catches a check that hangs, with room for the general pass's load on two cores.
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(error.code == (output == existing ? .outputExists : .invalidRequest))
            #expect(error.message.contains(expected), "\(error.message)")
            // The API's words: its fields, never the CLI's flags.
            #expect(!error.message.contains("-y"), "\(error.message)")
        }
        let exists = try Self.refusal(try await client.submitting(source, to: existing))
        #expect(exists.message.contains("`export.overwrite` is false"), "\(exists.message)")
        // The CLI says it in its own words, from the code.
        let cli = try await SpliceProcess.run(["submit", source, existing, "--coordinator", coordinator.endpoints.api,
                                               "--timeout", "20"])
        #expect(cli.status == 1)
        #expect(cli.stderr.contains("already exists; pass -y (--overwrite) to replace it"), "\(cli.stderr)")
        #expect(!cli.stderr.contains("export.overwrite"), "\(cli.stderr)")
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")
        let jobs = try await coordinator.repository.jobs(in: JobState.allCases)
        #expect(jobs.isEmpty, "no refused job was recorded")

        // With -y an existing output is accepted (the stitch replaces it); the input never is.
        let job = try await client.submit(source, to: existing, overwrite: true)
        #expect(try await client.status(job).state != .failed)
        #expect(try Self.refusal(try await client.submitting(source, to: link, overwrite: true)).message
            .contains("link-to-source.mp4"))
        await client.close()
        try await coordinator.stop()
    }

    @Test("a SUBMIT that leaves `audio` out keeps every audio track, as `splice submit` does")
    func apiDefaults() async throws {
        let source = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "2", sampleRate: 48_000, channels: 2))
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        #expect(try await worker.hello() != nil)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("defaults.mp4").path
        // What an integrator writes from the docs: the container, the segment length, a video preset.
        let export = #"{"fileType": "mp4", "segmentDuration": {"value": 1, "timescale": 1}, "video": {"codec": "h264", "preset": "ultrafast"}}"#
        let reply = try await client.request(.submit(SubmitJob(
            input: source, output: output, export: JSONPayload(JSONValue(parsing: Array(export.utf8))))))
        guard case .submitted(let submitted) = reply else { throw TestFailure("SUBMIT answered \(reply)") }
        // Encode whatever the job hands out until it is done.
        var status = try await client.status(submitted.job)
        while !status.isFinished {
            if let assign = await worker.assignment(within: .seconds(2)) {
                #expect(try await worker.complete(try await worker.acceptAndEncode(assign)) == .accepted)
            }
            status = try await client.status(submitted.job)
        }
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        let probe = try await Probe(output)
        #expect(probe.first("video")?.codec_name == "h264")
        #expect(probe.first("audio")?.codec_name == "aac", "the output has no audio: \(probe.streams.map(\.codec_type))")
        #expect(probe.first("audio")?.channels == 2)
        await worker.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a resent submission key: the same request is the same job, another request is ERROR conflict")
    func submissionKeyConflict() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let folder = Fixtures.temporaryDirectory("out")
        let output = folder.appendingPathComponent("keyed.mp4").path
        let submit = { (key: String, export: String, output: String, priority: Int?) async throws -> APIReply in
            try await client.request(.submit(SubmitJob(
                input: source, output: output, export: JSONPayload(JSONValue(parsing: Array(export.utf8))),
                priority: priority, submissionKey: key)))
        }
        let export = #"{"fileType": "mp4", "video": {"codec": "h264", "preset": "ultrafast", "quality": 30}}"#
        guard case .submitted(let first) = try await submit("key-1", export, output, nil) else {
            throw TestFailure("the first SUBMIT was refused")
        }
        // The same request resent — keys in another order, defaults spelled out — is the same job.
        // (Not `segmentDuration`: a length given is kept, absent the planner may lengthen it, so
        // spelling out 10 s asks for something else.)
        let spelledOut = #"{"video": {"quality": 30, "preset": "ultrafast", "codec": "h264"}, "overwrite": false, "#
            + #""audioTracks": "all", "fileType": "mp4"}"#
        for (again, priority) in [(export, nil), (spelledOut, 0 as Int?)] {
            guard case .submitted(let resent) = try await submit("key-1", again, output, priority) else {
                throw TestFailure("a resend was refused")
            }
            #expect(resent.job == first.job)
        }
        // The key reused for another request: another quality, another output, another priority.
        let changed: [(String, String, Int?)] = [
            (export.replacingOccurrences(of: "30", with: "31"), output, nil),
            (export, folder.appendingPathComponent("other.mp4").path, nil),
            (export, output, 5),
        ]
        for (body, path, priority) in changed {
            let refused = try Self.refusal(try await submit("key-1", body, path, priority))
            #expect(refused.code == .conflict)
            #expect(refused.message.contains("`submissionKey` key-1 already made job \(first.job)"), "\(refused.message)")
            #expect(!refused.isRetryable)
        }
        #expect(try await coordinator.repository.jobs(in: JobState.allCases).count == 1, "no second job")
        // A new key for the changed request is a new job.
        guard case .submitted(let second) = try await submit("key-2", changed[0].0, output, nil) else {
            throw TestFailure("a new key was refused")
        }
        #expect(second.job != first.job)
        await client.close()
        try await coordinator.stop()
    }

    @Test("with --input-root and --output-root, paths outside them are refused, links resolved")
    func roots() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let inputs = Fixtures.temporaryDirectory("in")
        let outputs = Fixtures.temporaryDirectory("out")
        let inside = inputs.appendingPathComponent("clip.mp4").path
        try FileManager.default.copyItem(atPath: source, toPath: inside)
        // A link inside the output root that points out of it.
        let escape = outputs.appendingPathComponent("escape").path
        try FileManager.default.createSymbolicLink(atPath: escape, withDestinationPath: Fixtures.temporaryDirectory("x").path)
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.inputRoots = [inputs.path]
            configuration.outputRoots = [outputs.path]
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let outside = try Self.refusal(try await client.submitting(source, to: outputs.appendingPathComponent("a.mp4").path))
        #expect(outside.message.contains("input root"))
        let dotted = inputs.appendingPathComponent("../" + URL(fileURLWithPath: source).lastPathComponent).path
        #expect(try Self.refusal(try await client.submitting(dotted, to: outputs.appendingPathComponent("a.mp4").path))
            .message.contains("input root"))
        #expect(try Self.refusal(try await client.submitting(inside, to: escape + "/a.mp4"))
            .message.contains("output root"))
        #expect(try Self.refusal(try await client.submitting(inside, to: "/tmp/a.mp4")).message.contains("output root"))
        // A verified job's report is written by the coordinator too: only inside an output root.
        let inRoot = outputs.appendingPathComponent("a.mp4").path
        for report in ["/tmp/report.html", escape + "/report.html", "report.html", inside] {
            let refusal = try Self.refusal(try await client.submitting(
                inside, to: inRoot, quality: QualityRequest(verify: .fail, reportPath: report)))
            #expect(refusal.message.contains("export.quality.reportPath"), "\(report): \(refusal.message)")
        }
        guard case .submitted = try await client.submitting(inside, to: outputs.appendingPathComponent("b.mp4").path,
            quality: QualityRequest(verify: .fail, reportPath: outputs.appendingPathComponent("b.html").path)) else {
            throw TestFailure("a report inside the output root was refused")
        }
        _ = try await client.submit(inside, to: inRoot)
        await client.close()
        try await coordinator.stop()
    }

    @Test("a planning step that crashes fails its job, not the coordinator; a restart does not replay it")
    func crashingPlanner() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        // A stand-in for a `splice media-task` that hits an FFmpeg bug: it dies of SIGSEGV.
        let script = Fixtures.temporaryDirectory("bin").appendingPathComponent("crashing-media-task")
        try "#!/bin/sh\ncat > /dev/null\nkill -SEGV $$\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let database = try await TestPostgres.makeDatabase()
        let coordinator = try await CoordinatorUnderTest.start(database: database) { configuration in
            configuration.mediaTasks = .childProcess(executable: script.path)
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("o.mp4").path)
        let status = try await client.wait(for: job, toBe: [.failed, .succeeded], within: .seconds(30))
        #expect(status.state == .failed)
        #expect(status.error?.contains("crashed (signal 11)") == true, "\(status.error ?? "")")
        // Still serving.
        guard case .jobs(let list) = try await client.request(.list(ListJobs())) else {
            Issue.record("LIST did not answer")
            return
        }
        #expect(list.jobs.count == 1)
        await client.close()
        try await coordinator.stop()

        // A new coordinator on the same database finds the job failed and leaves it so.
        let again = try await CoordinatorUnderTest.start(database: database) { configuration in
            configuration.mediaTasks = .childProcess(executable: script.path)
        }
        try await Task.sleep(for: .seconds(1))
        #expect(try await again.repository.job(id: job)?.state == .failed)
        try await again.stop()
    }

    @Test("planning and stitching in real `splice media-task` children: the job plays like the source")
    func realChild() async throws {
        let source = try await TestMedia.clip(seconds: 2)
        let splice = try SpliceBinary.executable()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.mediaTasks = .childProcess(executable: splice.path)
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("o.mp4").path
        let job = try await client.submit(source, to: output)
        #expect(try await worker.hello() != nil)
        for _ in 0..<2 {
            let assign = try #require(await worker.assignment())
            #expect(try await worker.complete(try await worker.acceptAndEncode(assign)) == .accepted)
        }
        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        #expect(try await TestMedia.frames(output) == (try await TestMedia.frames(source)))
        await worker.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("an output folder that vanishes before the stitch fails the job with the reason; the coordinator stays up")
    func stitchFailure() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let folder = Fixtures.temporaryDirectory("out")
        let job = try await client.submit(source, to: folder.appendingPathComponent("o.mp4").path)
        #expect(try await worker.hello() != nil)
        let assign = try #require(await worker.assignment())
        let result = try await worker.acceptAndEncode(assign)
        try FileManager.default.removeItem(at: folder)
        #expect(try await worker.complete(result) == .accepted)
        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .failed)
        #expect(status.error?.contains("stitching failed") == true, "\(status.error ?? "")")
        #expect(status.error?.contains(folder.path) == true, "\(status.error ?? "")")

        // Still working: the next job completes.
        let next = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("n.mp4").path)
        let second = try #require(await worker.assignment())
        #expect(try await worker.complete(try await worker.acceptAndEncode(second)) == .accepted)
        #expect(try await client.wait(for: next, toBe: [.succeeded, .failed]).state == .succeeded)
        await worker.close()
        await client.close()
        try await coordinator.stop()
    }
}

@Suite("Source protocols at submit", .timeLimit(.minutes(4)))
struct SourceProtocolTests {
    @Test("only file, http and https inputs are accepted by default; concat:, subfile:, devices are refused with the list")
    func allowList() async throws {
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("a.mp4").path
        let source = try await TestMedia.clip(seconds: 1)
        for input in ["concat:\(source)|\(source)", "subfile,,start,0,end,100,,:\(source)", "pipe:0", "/dev/../dev/video0x",
                      "tcp://127.0.0.1:9", "http:/no-slashes", "relative.mp4"] {
            let error = try CoordinatorSubmitTests.refusal(try await client.submitting(input, to: output))
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("allowed: file, http, https") || error.message.contains("URL")
                    || error.message.contains("cannot be read") || error.message.contains("absolute path"),
                    "\(input): \(error.message)")
        }
        let concat = try CoordinatorSubmitTests.refusal(try await client.submitting("concat:\(source)|\(source)", to: output))
        #expect(concat.message.contains("protocol 'concat'") && concat.message.contains("--source-protocols"))
        // A web URL is accepted at submit; planning opens it (and fails the job with the reason: nothing listens).
        let job = try await client.submit("http://127.0.0.1:9/clip.mp4", to: output)
        #expect(await eventually(within: .seconds(60)) { (try? await client.status(job).state) == .failed })
        let failed = try await client.status(job)
        #expect(failed.error?.contains("127.0.0.1:9") == true, "\(String(describing: failed.error))")
        let jobs = try await coordinator.repository.jobs(in: JobState.allCases)
        #expect(jobs.count == 1, "no refused job was recorded")
        await client.close()
        try await coordinator.stop()
    }

    @Test("--source-protocols file: web URLs are refused too; an unknown protocol name stops the coordinator at start")
    func narrowed() async throws {
        let coordinator = try await CoordinatorUnderTest.start { $0.sourceProtocols = ["file"] }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("a.mp4").path
        let error = try CoordinatorSubmitTests.refusal(try await client.submitting("https://example.com/a.mp4", to: output))
        #expect(error.message.contains("protocol 'https'") && error.message.contains("allowed: file;"))
        await client.close()
        try await coordinator.stop()
        await #expect(throws: (any Error).self) {
            let bad = try await CoordinatorUnderTest.start { $0.sourceProtocols = ["file", "concat"] }
            try await bad.stop()
        }
    }
}
