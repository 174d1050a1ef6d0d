import Foundation
import SpliceCore
import SpliceJSON
import SpliceWire

/// One sample of every message type of every direction, with optional fields both set and unset.
enum Samples {
    static let job = JobID("7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c")!
    static let attempt = SegmentAttempt(
        job: job, segment: 12, attempt: 2, leaseToken: LeaseToken("7c1e9d2a-5b7e-4c11-9f00-abcdef012345")!)
    static let key = try! CurvePublicKey(z85: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")

    static let complete = Complete(
        attempt: attempt, outputPath: "/spool/job-7f3a/0012-2.mkv",
        checksum: SHA256Digest(bytes: [UInt8](repeating: 0xAB, count: 32))!, sizeBytes: 12_345_678_901, encodeMilliseconds: 8_100
    )
    /// A COMPLETE with its video figures (the plain one above has none, as an older worker's).
    static let completeWithFigures = Complete(
        attempt: attempt, outputPath: "/spool/job-7f3a/0012-2.mkv",
        checksum: SHA256Digest(bytes: [UInt8](repeating: 0xAB, count: 32))!, sizeBytes: 301_442, encodeMilliseconds: 8_100,
        videoFrames: 60, figures: SegmentFigures(videoBytes: 298_113, videoBitsPerSecond: 1_192_452, meanQP: 27.43)
    )
    static let fail = Fail(attempt: attempt, code: .undecodableInput, reason: "no frames decoded", retryable: false)
    static let spec: JSONValue = .object([
        "range": .object([
            "start": .integer(9_007_199_254_740_993), "duration": .integer(90_000), "timescale": .integer(90_000),
        ]),
        "codec": .string("libx264"), "crf": .double(20.5), "audio": .bool(true), "filters": .array([]), "note": .null,
    ])

    static let worker: [WorkerMessage] = [
        .hello(Hello(
            workerName: "encoder-3", slots: 4, encoders: ["libx264", "aac"], running: [attempt], finished: [complete],
            failed: [fail], software: "0.1.0", usableCores: 8, threadsPerSlot: 2, metricsEndpoint: "127.0.0.1:9452"
        )),
        .hello(Hello(workerName: "fresh", slots: 1, encoders: [])),
        .accept(Accept(attempt: attempt)),
        .progress(Progress(attempt: attempt, fraction: 0.25, frames: 300, totalFrames: 1200)),
        .progress(Progress(attempt: attempt, fraction: 0, frames: 0)),
        .complete(complete),
        .complete(completeWithFigures),
        .fail(fail),
        .heartbeat(Heartbeat()),
        .disconnect(Disconnect(reason: .shutdown, detail: "SIGTERM")),
        .join(Join(token: "splj_example", workerName: "pod-7")),
    ]

    static let coordinator: [CoordinatorMessage] = [
        .welcome(Welcome(session: "c-1", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3)),
        .assign(Assign(
            attempt: attempt, outputPath: "/spool/job-7f3a/0012-2.mkv", leaseMilliseconds: 30_000,
            progressIntervalMilliseconds: 1_000, spec: JSONPayload(spec)
        )),
        .cancel(Cancel(attempt: attempt, reason: .jobCancelled)),
        .ack(Ack(attempt: attempt, acknowledges: .complete, outcome: .accepted)),
        .ack(Ack(attempt: attempt, acknowledges: .fail, outcome: .stale)),
        .ack(Ack(attempt: attempt, acknowledges: .progress, outcome: .accepted)),
        .ack(Ack(attempt: attempt, acknowledges: .accept, outcome: .duplicate)),
        .heartbeat(Heartbeat()),
        .disconnect(Disconnect(reason: .revoked)),
        .welcome(Welcome(session: "c-2", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3, epoch: 7)),
        .standby(Standby(epoch: 7, active: "tcp://b:7450")),
        .standby(Standby()),
        .active(Active(epoch: 8)),
        .joined(Joined(outcome: .joined)),
        .joined(Joined(outcome: .refused, reason: "used-up", detail: "create a new one")),
    ]

    static let status = JobStatus(
        job: job, state: .running, input: "/in/a.mov", output: "/out/a.mp4", priority: 0, segmentsTotal: 40,
        segmentsDone: 12, fraction: 0.3, submittedAtMilliseconds: 1_790_000_000_000
    )

    /// A STATUS answer listing segments: one done with figures, an audio one done without, one pending.
    static let statusWithSegments = JobStatus(
        job: job, state: .running, input: "/in/a.mov", output: "/out/a.mp4", priority: 0, segmentsTotal: 3,
        segmentsDone: 2, fraction: 0.66, submittedAtMilliseconds: 1_790_000_000_000,
        segments: [SegmentStatus(index: 0, state: .done, figures: completeWithFigures.figures),
                   SegmentStatus(index: 1, state: .done), SegmentStatus(index: 2, state: .pending)]
    )

    static let requests: [APIRequest] = [
        .submit(SubmitJob(input: "/in/a.mov", output: "/out/a.mp4", export: JSONPayload(spec), priority: 5,
                          submissionKey: "0b7e2c1e-submit")),
        .submit(SubmitJob(input: "/in/b.mov", output: "/out/b.mp4", export: JSONPayload(.object([:])))),
        .status(JobStatusQuery(job: job)),
        .list(ListJobs(state: .running, limit: 20)),
        .list(ListJobs()),
        .cancel(CancelJob(job: job)),
        .workers(ListWorkers()),
        .enroll(EnrollWorker(publicKey: key, name: "encoder-3")),
        .revoke(RevokeWorker(publicKey: key)),
        .createToken(CreateToken(name: "ingest", scopes: [.submit, .read], inputRoots: ["/media/in"],
                                 outputRoots: ["/media/out"], rateLimit: 50, expiresInSeconds: 86_400)),
        .tokens(ListTokens()),
        .revokeToken(RevokeToken(name: "ingest")),
        .createJoinToken(CreateJoinToken(name: "pods", uses: 10, ttlSeconds: 3600)),
        .joinTokens(ListJoinTokens()),
        .revokeJoinToken(RevokeJoinToken(name: "pods")),
        .pruneWorkers(PruneWorkers(notSeenSeconds: 86_400, dryRun: true)),
        .pruneJobs(PruneJobs(finishedBeforeSeconds: 2_592_000)),
    ]

    static let token = TokenInfo(name: "ingest", scopes: [.read, .submit], inputRoots: ["/media/in"],
                                 outputRoots: ["/media/out"], rateLimit: 50, createdAtMilliseconds: 1_790_000_000_000,
                                 expiresAtMilliseconds: 1_790_086_400_000, revokedAtMilliseconds: nil)

    static let joinToken = JoinTokenInfo(name: "pods", uses: 10, usesLeft: 7, createdAtMilliseconds: 1_790_000_000_000,
                                         expiresAtMilliseconds: 1_790_003_600_000)

    static let replies: [APIReply] = [
        .submitted(JobSubmitted(job: job)),
        .status(status),
        .status(statusWithSegments),
        .jobs(JobList(jobs: [status, status])),
        .cancelled(JobCancelled(job: job, state: .cancelled)),
        .workers(WorkerList(workers: [WorkerInfo(
            publicKey: key, name: "encoder-3", enrolled: true, connected: true, slots: 4, running: 2,
            lastSeenAtMilliseconds: 1_790_000_000_500, usableCores: 8, threadsPerSlot: 2, metricsEndpoint: "127.0.0.1:9452"
        )])),
        .workerKey(WorkerKeyChanged(publicKey: key, enrolled: false, sessionsClosed: 1)),
        .token(TokenChanged(token: "spl_example", info: token)),
        .tokens(TokenList(tokens: [token])),
        .joinToken(JoinTokenChanged(token: "splj_example", info: joinToken)),
        .joinTokens(JoinTokenList(tokens: [joinToken])),
        .workersPruned(WorkersPruned(workers: [.init(publicKey: key.z85, name: "pod-7",
                                                     lastSeenAtMilliseconds: 1_790_000_000_000)], dryRun: false)),
        .jobsPruned(JobsPruned(jobs: 1000, segments: 12_000, events: 80_000, webhookEvents: 10, dryRun: false)),
        .error(APIError(.notFound, "no job job-0", isRetryable: false)),
        .error(APIError(.notActive, "this coordinator (b) is a standby; the active coordinator is a at tcp://a:7451",
                        active: "tcp://a:7451")),
    ]
}
