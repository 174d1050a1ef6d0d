import Foundation
import SpliceCore
import SpliceTestSupport
import SpliceWire
import Testing

@testable import splice
import SpliceClient

/// What `status`, `jobs`, `workers`, `cancel`, `keys` and `submit --wait` print, from values
/// (no coordinator).
@Suite("Client rendering")
struct ClientRenderingTests {
    /// 2026-11-30 17:20:01.250 UTC.
    static let submitted: Int64 = 1_796_059_201_250

    /// Job `number`'s id.
    static func id(_ number: Int) -> JobID { .numbered(number) }

    static func job(_ number: Int, _ state: JobState, done: Int = 0, total: Int? = nil, fraction: Double = 0,
                    error: String? = nil, finished: Int64? = nil) -> JobStatus {
        JobStatus(job: id(number), state: state, input: "/media/in.mov", output: "/media/\(id(number)).mp4",
                  priority: 0, segmentsTotal: total, segmentsDone: done, fraction: fraction,
                  submittedAtMilliseconds: submitted, finishedAtMilliseconds: finished, error: error)
    }

    @Test("status: one aligned line per field; error and finish time only when there are some")
    func status() {
        #expect(StatusCommand.lines(for: Self.job(1, .running, done: 5, total: 12, fraction: 0.4321)) == [
            "job        \(Self.id(1))",
            "state      running",
            "progress   5/12 segments (43%)",
            "input      /media/in.mov",
            "output     /media/\(Self.id(1)).mp4",
            "priority   0",
            "submitted  2026-11-30 17:20:01 UTC",
        ])
        let failed = StatusCommand.lines(for: Self.job(2, .failed, done: 3, total: 4, fraction: 0.75,
                                                       error: "segment 3 failed on 3 workers: cannot decode",
                                                       finished: Self.submitted + 61_000))
        #expect(failed.contains("finished   2026-11-30 17:21:02 UTC"))
        #expect(failed.last == "error      segment 3 failed on 3 workers: cannot decode")
        #expect(StatusCommand.lines(for: Self.job(3, .queued))[2] == "progress   not planned yet")
    }

    @Test("status with segments: after the fields, a blank line and one row per segment; - where there is no figure")
    func statusSegments() {
        var status = Self.job(4, .running, done: 2, total: 3, fraction: 0.6)
        status.segments = [
            SegmentStatus(index: 0, state: .done,
                          figures: SegmentFigures(videoBytes: 156_160, videoBitsPerSecond: 624_499, meanQP: 27.4)),
            SegmentStatus(index: 1, state: .done, figures: SegmentFigures(videoBytes: 1_000)),
            SegmentStatus(index: 2, state: .leased),
        ]
        let lines = StatusCommand.lines(for: status)
        #expect(Array(lines.prefix(7)) == StatusCommand.lines(for: Self.job(4, .running, done: 2, total: 3, fraction: 0.6)))
        #expect(Array(lines.dropFirst(7)) == [
            "",
            "SEGMENT  STATE   VIDEO KiB  KBIT/S  MEAN QP",
            "0        done    152        624     27.40",
            "1        done    0          -       -",
            "2        leased  -          -       -",
        ])
    }

    @Test("jobs: a table with a header, columns as wide as their widest cell")
    func jobs() {
        let lines = JobsCommand.table([
            Self.job(7, .running, done: 1, total: 4, fraction: 0.3),
            Self.job(6, .queued),
        ]).lines
        let (first, second) = (Self.id(7), Self.id(6))
        #expect(lines == [
            "JOB" + String(repeating: " ", count: 33) + "  STATE    SEGMENTS  DONE  SUBMITTED (UTC)      OUTPUT",
            "\(first)  running  1/4       30%   2026-11-30 17:20:01  /media/\(first).mp4",
            "\(second)  queued   -         0%    2026-11-30 17:20:01  /media/\(second).mp4",
        ])
    }

    @Test("workers: key, name, connection, protocol version, slots, cores and threads per slot, work, mode, bytes, metrics, quarantine")
    func workers() throws {
        let key = try CurveKeyPair.generate().publicKey
        let lines = WorkersCommand.table([
            WorkerInfo(publicKey: key, name: "gpu-1", enrolled: true, connected: true, slots: 4, running: 3,
                       lastSeenAtMilliseconds: Self.submitted, storage: .transfer, bytesIn: 12_350_000, bytesOut: 49_999,
                       usableCores: 16, threadsPerSlot: 4, metricsEndpoint: "127.0.0.1:9452", protocolVersion: 3),
            WorkerInfo(publicKey: key, name: nil, enrolled: false, connected: false, slots: nil, running: 0,
                       lastSeenAtMilliseconds: nil),
            WorkerInfo(publicKey: key, name: "w2", enrolled: true, connected: true, slots: 1, running: 0,
                       lastSeenAtMilliseconds: Self.submitted, quarantineRemainingMilliseconds: 9_200,
                       quarantineReason: "spool-unwritable: read-only", storage: .spool, protocolVersion: 2),
        ]).lines
        let padding = String(repeating: " ", count: 40 - 3)
        #expect(lines[0] == "KEY" + padding + "  NAME   ENROLLED  CONNECTED  PROTOCOL  SLOTS  CORES  THREADS/SLOT  RUNNING  "
            + "MODE      IN/OUT          METRICS         LAST SEEN (UTC)      QUARANTINE")
        #expect(lines[1] == key.z85 + "  gpu-1  yes       yes        3         4      16     4             3        "
            + "transfer  12.4 MB/0.0 MB  127.0.0.1:9452  2026-11-30 17:20:01  -")
        #expect(lines[2] == key.z85 + "  -      revoked   no         -         -      -      -             0        "
            + "-         -               -               -                    -")
        #expect(lines[3] == key.z85 + "  w2     yes       yes        2         1      -      -             0        "
            + "spool     -               -               2026-11-30 17:20:01  10s: spool-unwritable: read-only")
    }

    @Test("cancel says whether it cancelled or the job had already finished")
    func cancel() {
        #expect(CancelCommand.line(for: JobCancelled(job: Self.id(1), state: .cancelled)) == "job \(Self.id(1)) cancelled")
        #expect(CancelCommand.line(for: JobCancelled(job: Self.id(1), state: .succeeded))
            == "job \(Self.id(1)) had already finished (succeeded); nothing to cancel")
    }

    @Test("a finished job's outcome is the exit status: 0 succeeded, 1 failed with its error, 2 cancelled")
    func outcomes() {
        let cases: [(JobStatus, ExitCode, String, String)] = [
            (Self.job(1, .succeeded, done: 4, total: 4, fraction: 1), .success,
             "job \(Self.id(1)) succeeded: /media/\(Self.id(1)).mp4\n", ""),
            (Self.job(2, .failed, error: "cannot open /media/in.mov: no such file"), ExitCode(1),
             "", "splice submit: job \(Self.id(2)) failed: cannot open /media/in.mov: no such file\n"),
            (Self.job(3, .failed), ExitCode(1), "", "splice submit: job \(Self.id(3)) failed: no reason was recorded\n"),
            (Self.job(4, .cancelled), ExitCode(2), "", "splice submit: job \(Self.id(4)) was cancelled\n"),
        ]
        for (status, code, stdout, stderr) in cases {
            let out = Captured(), err = Captured()
            let exit = SubmitCommand.report(status, commandPath: ["splice", "submit"], output: out.output,
                                            errorOutput: err.output)
            #expect(exit == code)
            #expect(out.value == stdout)
            #expect(err.value == stderr)
        }
    }

    @Test("--wait: segments as counted progress; one line when the coordinator goes away, one when it is back")
    func waitDisplay() {
        let err = Captured()
        let display = JobWaitDisplay(label: "out.mp4", output: err.output)
        let lost = SpliceClientError(.unreachable, "no coordinator answered at tcp://c:7451", isRetryable: true)
        display.show(.status(Self.job(5, .queued)))
        display.show(.status(Self.job(5, .running, done: 1, total: 4, fraction: 0.3)))
        display.show(.unreachable(lost))
        display.show(.unreachable(lost))
        display.show(.reachable)
        display.show(.status(Self.job(5, .running, done: 1, total: 4, fraction: 0.4)))
        display.show(.status(Self.job(5, .stitching, done: 4, total: 4, fraction: 0.99)))
        display.stop(succeeded: true)
        #expect(err.value == """
            progress 25% 1/4
            coordinator unreachable, retrying (no coordinator answered at tcp://c:7451)
            coordinator reachable again
            progress 100% 4/4

            """)
    }

    @Test("on a terminal the outage line clears the bar's line first")
    func waitDisplayOnTerminal() {
        let err = Captured(isTerminal: true)
        let display = JobWaitDisplay(label: "out.mp4", output: err.output)
        display.show(.status(Self.job(5, .running, done: 1, total: 4)))
        display.show(.unreachable(SpliceClientError(.unreachable, "gone", isRetryable: true)))
        #expect(err.value.contains("1/4"))
        #expect(err.value.hasSuffix("\r\u{1B}[Kcoordinator unreachable, retrying (gone)\n"))
    }

    @Test("times are UTC to the second; none is a dash")
    func times() {
        #expect(ClusterText.time(millisecondsSinceEpoch: 0) == "1970-01-01 00:00:00")
        #expect(ClusterText.time(millisecondsSinceEpoch: Self.submitted) == "2026-11-30 17:20:01")
        #expect(ClusterText.time(millisecondsSinceEpoch: nil) == "-")
    }

    @Test("keys generate takes a name without extension")
    func keyNames() throws {
        #expect(usageError(["worker.key"], for: KeysGenerateCommand.self)?
            .hasPrefix("<name>: give 'worker' without .key") == true)
        #expect(usageError(["keys/"], for: KeysGenerateCommand.self)?
            .hasPrefix("<name>: 'keys/' names a folder") == true)
        let command = try parse(["/etc/splice/coordinator"], as: KeysGenerateCommand.self)
        #expect(command.secretKeyPath == "/etc/splice/coordinator.key")
        #expect(command.publicKeyPath == "/etc/splice/coordinator.pub")
    }

    @Test("db: --database is required, and a malformed URL is refused without showing its password")
    func database() async {
        let missing = await runCLI(["db", "status"], root: SpliceCommand.self)
        #expect(missing.code == .usage)
        #expect(missing.stderr.hasPrefix("splice db status: missing --database <url> (or set SPLICE_DATABASE_URL)"))
        let malformed = await runCLI(["db", "migrate"], environment: [
            "SPLICE_DATABASE_URL": "postgresql://splice:hunter2@db/splice?nonsense=1",
        ], root: SpliceCommand.self)
        #expect(malformed.code == .usage)
        #expect(malformed.stderr.hasPrefix("splice db migrate: --database: cannot parse the database URL"))
        #expect(!malformed.stderr.contains("hunter2"))
    }
}
