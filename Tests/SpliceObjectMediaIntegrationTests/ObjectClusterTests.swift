import Foundation
import SpliceCore
import SpliceObjectStore
import SpliceStore
import SpliceTestSupport
import Testing

/// A cluster of real `splice` processes with `s3://` jobs: the coordinator holds the object
/// store's credentials (its `AWS_*`), the workers none — one with the shared spool, one in
/// transfer mode — and the bucket and ffmpeg judge.
@Suite("Media in object storage: the cluster", .timeLimit(.minutes(5)))
struct ObjectClusterTests {
    @Test("a cluster job from s3:// to s3:// decodes like the same job on files; the workers never see a credential")
    func clusterJobBetweenObjects() async throws {
        let s3 = try await S3Media.make()
        let server = try await TestS3.server()
        var cluster = try await LocalCluster.start(workers: 1, coordinatorEnvironment: s3.environment)
        try await cluster.addTransferWorker(named: "t0", isolated: false)
        let source = try await ObjectCommandTests.clip()
        try await s3.put(source, as: "in/clip.mov")
        // SUBMIT reads the source from the emulator (in Python, on the same two cores as the whole
        // suite): a minute, not the client's default 10 s, to answer.
        let flags = ["--preset", "ultrafast", "--segment-seconds", "1", "--wait", "--coordinator", cluster.coordinator.api,
                     "--timeout", "60"]

        // The client needs no credentials either: the coordinator reads and writes the bucket.
        let stored = try await SpliceProcess.run(["submit", s3.url("in/clip.mov"), s3.url("out/job.mp4")] + flags,
                                                 timeout: .seconds(180))
        try #require(stored.status == 0, "\(stored.stderr)\n\(cluster.coordinatorLogs)")
        let local = cluster.outputPath("job.mp4")
        let onDisk = try await SpliceProcess.run(["submit", source, local] + flags, timeout: .seconds(180))
        try #require(onDisk.status == 0, "\(onDisk.stderr)")

        let fromBucket = try await Digests(of: try await s3.download("out/job.mp4"))
        let fromFile = try await Digests(of: local)
        // 3 s at 30 fps; AAC decodes in whole 1024-sample frames, the last one padded (as ffmpeg's own encode).
        #expect(fromBucket.video.count == 90 && fromBucket.audioSamples == (3 * 48000 + 1023) / 1024 * 1024)
        #expect(fromBucket.firstDifferences(from: fromFile) == (nil, nil) && fromBucket == fromFile)
        #expect(try await s3.unfinishedUploads().isEmpty)

        // Both workers' kinds read the object source through excerpts the coordinator cut.
        let job = try #require(SpliceProcess.submittedJob(in: stored.stderr))
        let segments = try await cluster.segments(of: job)
        #expect(!segments.isEmpty && segments.allSatisfy { $0.state == .done })
        let doers = Set(try await cluster.segmentsDone(job: job).values)
        let spoolWorker = try #require(try await cluster.workerID(named: "w0"))
        let transferWorker = try #require(try await cluster.workerID(named: "t0"))
        #expect(doers == [spoolWorker, transferWorker], "the shared-spool worker and the transfer worker each encode segments")
        #expect(cluster.coordinatorLogs.contains("source excerpt ready"))
        // No credential in the job's row, the store's events, or any process's log.
        let row = try #require(try await cluster.job(job))
        let stored_ = "\(row) \(try await cluster.events(of: job)) \(cluster.logs)"
        #expect(!stored_.contains(server.secretAccessKey) && !stored_.contains(server.accessKeyID))

        // An output that is there now is refused at SUBMIT without -y.
        let again = try await SpliceProcess.run(["submit", s3.url("in/clip.mov"), s3.url("out/job.mp4")] + flags)
        #expect(again.status == 1 && again.stderr.contains("already exists"), "\(again.stderr)")
        try await cluster.stop()
    }

    @Test("a job cancelled while its output goes up in parts leaves no object and no multipart upload")
    func cancelledWhileUploading() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Media.make(endpoint: tap.endpoint)
        let cluster = try await LocalCluster.start(workers: 1, coordinatorEnvironment: s3.environment)
        // About 105 MB of video copied into the output (the workers encode the audio), so the
        // stitch streams it in 8 MiB parts; the first parts are slow to be taken, so the CANCEL
        // arrives while the upload is under way.
        let source = try await LargeObjectTests.source()
        try await tap.delay("PUT", milliseconds: 3000, count: 2)
        let submit = try SpliceProcess(["submit", source, s3.url("out/cancelled.mov"), "--copy-video", "--audio-codec", "aac",
                                        "--segment-seconds", "1", "--wait", "--coordinator", cluster.coordinator.api])
        let uploading = await eventually(within: .seconds(180)) {
            !((try? await s3.unfinishedUploads()) ?? []).isEmpty || !submit.isRunning
        }
        try #require(uploading && submit.isRunning, "no upload began: \(submit.stderrText)\n\(cluster.coordinatorLogs)")
        let job = try #require(SpliceProcess.submittedJob(in: submit.stderrText))
        let cancel = try await SpliceProcess.run(["cancel", job, "--coordinator", cluster.coordinator.api])
        #expect(cancel.status == 0, "\(cancel.stderr)")

        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 2, "submit: \(result.stderr)")
        let cleared = await eventually(within: .seconds(60)) { (try? await s3.unfinishedUploads())?.isEmpty == true }
        let left = try await s3.unfinishedUploads()
        let timeline = try Self.uploadTimeline(tap)
        #expect(cleared && left.isEmpty, "multipart uploads left behind: \(left)\n\(timeline)\n\(cluster.coordinatorLogs)")
        #expect(try await s3.store.info(s3.object("out/cancelled.mov")) == nil)
        let sent = try tap.records().map { "\($0.method) \($0.path)" }
        #expect(sent.contains { $0.hasPrefix("DELETE ") && $0.contains("uploadId=") }, "no AbortMultipartUpload sent: \(sent)")
        // The stitch stopped: the upload was never completed (to be deleted again afterwards).
        #expect(!sent.contains { $0.hasPrefix("POST ") && $0.contains("uploadId=") }, "the upload was completed: \(sent)")
        #expect(await eventually(within: .seconds(30)) { cluster.coordinatorLogs.contains("its stitch stopped") },
                "\(cluster.coordinatorLogs)")
        try await cluster.stop()
    }

    /// What the tap saw of multipart uploads, in time order: creations, parts, aborts and
    /// completions with the answers they got — what a leftover upload is explained by.
    static func uploadTimeline(_ tap: S3Tap) throws -> String {
        var lines: [String] = []
        var asked: [Int: String] = [:]
        for event in try tap.timeline() {
            switch event {
            case .request(let seq, let record) where record.path.contains("upload"):
                asked[seq] = "\(record.method) \(record.path)"
                lines.append("#\(seq) \(record.method) \(record.path)")
            case .answered(let seq, let status):
                if let request = asked[seq] { lines.append("#\(seq) answered \(status) (\(request.prefix(40)))") }
            default:
                break
            }
        }
        return "the tap's multipart requests:\n" + lines.joined(separator: "\n")
    }

    @Test("object roots confine s3:// inputs and outputs to their prefixes (and paths to none)")
    func objectRoots() async throws {
        let s3 = try await S3Media.make()
        let source = try await ObjectCommandTests.clip()
        try await s3.put(source, as: "in/clip.mov")
        try await s3.put(source, as: "private/clip.mov")
        let cluster = try await LocalCluster.start(
            workers: 0, coordinatorFlags: ["--input-root", s3.url("in/"), "--output-root", s3.url("out")],
            coordinatorEnvironment: s3.environment)
        func submit(_ input: String, _ output: String) async throws -> SpliceProcess.Result {
            // A minute to answer: SUBMIT reads the source from the emulator on the loaded test machine.
            try await SpliceProcess.run(["submit", input, output, "--coordinator", cluster.coordinator.api, "--timeout", "60"])
        }
        // Outside the input root: another prefix, and one that only starts like it.
        for input in [s3.url("private/clip.mov"), s3.url("inside/clip.mov")] {
            let refused = try await submit(input, s3.url("out/a.mp4"))
            #expect(refused.status == 1 && refused.stderr.contains("not inside an input root"), "\(input): \(refused.stderr)")
        }
        let outside = try await submit(s3.url("in/clip.mov"), s3.url("outside/a.mp4"))
        #expect(outside.status == 1 && outside.stderr.contains("not inside an output root"), "\(outside.stderr)")
        // Object roots only: a path is refused too.
        let path = try await submit(source, s3.url("out/a.mp4"))
        #expect(path.status == 1 && path.stderr.contains("not inside an input root"), "\(path.stderr)")
        #expect(try await cluster.repository.jobs(in: [.queued, .planning, .running], limit: 10).isEmpty)
        // Inside both: the job is created.
        let admitted = try await submit(s3.url("in/clip.mov"), s3.url("out/a.mp4"))
        #expect(admitted.status == 0, "\(admitted.stderr)")
        let created = try await cluster.repository.jobs(limit: 10)
        #expect(created.map(\.id.description) == [admitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        try await cluster.stop()
    }

    @Test("a coordinator with a wrong secret key refuses an s3:// job at SUBMIT, saying which key to check")
    func wrongCredentialsAtSubmit() async throws {
        let s3 = try await S3Media.make()
        let source = try await ObjectCommandTests.clip()
        try await s3.put(source, as: "in/clip.mov")
        let wrong = try await TestS3.environment(secret: "not-the-secret-key-of-this-access-key")
        let cluster = try await LocalCluster.start(workers: 0, coordinatorEnvironment: wrong)
        let started = ContinuousClock.now
        let result = try await SpliceProcess.run(["submit", s3.url("in/clip.mov"), s3.url("out/never.mp4"),
                                                  "--coordinator", cluster.coordinator.api])
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 1)
        #expect(result.stderr.contains("s3://\(s3.bucket)/in/clip.mov") && result.stderr.contains("AWS_SECRET_ACCESS_KEY"),
                "\(result.stderr)")
        print("wrong credentials refused by `splice submit` after \(elapsed) (the client process included)")
        #expect(try await cluster.repository.jobs(in: [.queued, .planning, .running], limit: 10).isEmpty)
        try await cluster.stop()
    }
}
