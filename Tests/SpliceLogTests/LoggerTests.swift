import Foundation
import Synchronization
import Testing

@testable import SpliceLog

/// Collects lines in memory.
final class CapturingSink: LogSink {
    private let captured = Mutex<[String]>([])

    var lines: [String] { captured.withLock { $0 } }

    func write(line: String) {
        captured.withLock { $0.append(line) }
    }
}

/// 2026-11-30T16:42:08.123Z
let fixedClock = LogClock { 1_796_056_928_123 }

@Suite("Logger")
struct LoggerTests {
    @Test("a line has ts, level, msg, then fields in call order")
    func lineLayout() {
        let sink = CapturingSink()
        let log = Logger(sink: sink, clock: fixedClock)
        log.info("segment leased", ["job": "4f1c", "segment": 3, "attempt": 1])
        #expect(sink.lines == [
            #"ts=2026-11-30T16:42:08.123Z level=info msg="segment leased" job=4f1c segment=3 attempt=1"#,
        ])
    }

    @Test("values with spaces, quotes, = or control characters are quoted and escaped")
    func quoting() {
        #expect(LogFormat.quoted("plain") == "plain")
        #expect(LogFormat.quoted("") == #""""#)
        #expect(LogFormat.quoted("two words") == #""two words""#)
        #expect(LogFormat.quoted("a=b") == #""a=b""#)
        #expect(LogFormat.quoted(#"say "hi""#) == #""say \"hi\"""#)
        #expect(LogFormat.quoted(#"C:\dir"#) == #""C:\\dir""#)
        #expect(LogFormat.quoted("line\nbreak\ttab") == #""line\nbreak\ttab""#)
        #expect(LogFormat.quoted("bell\u{07}") == #""bell\u{7}""#)
        #expect(LogFormat.quoted("naïve/path.mp4") == "naïve/path.mp4")
    }

    @Test("lines below the level are dropped")
    func levels() {
        let sink = CapturingSink()
        let log = Logger(level: .warning, sink: sink, clock: fixedClock)
        log.debug("noise")
        log.info("noise")
        log.warning("retrying", ["attempt": 2])
        log.error("gave up")
        #expect(sink.lines.count == 2)
        #expect(sink.lines[0].contains("level=warning msg=retrying attempt=2"))
        #expect(sink.lines[1].contains("level=error msg=\"gave up\""))
        #expect(!log.isEnabled(.info))
    }

    @Test("SPLICE_LOG_LEVEL sets the level; an unknown name falls back to info with a warning")
    func environmentLevel() {
        #expect(Logger.configured(environment: [:], sink: CapturingSink()).level == .info)
        #expect(Logger.configured(environment: ["SPLICE_LOG_LEVEL": "DEBUG"], sink: CapturingSink()).level == .debug)
        #expect(Logger.configured(environment: ["SPLICE_LOG_LEVEL": "warn"], sink: CapturingSink()).level == .warning)

        let sink = CapturingSink()
        let log = Logger.configured(environment: ["SPLICE_LOG_LEVEL": "chatty"], sink: sink, clock: fixedClock)
        #expect(log.level == .info)
        #expect(sink.lines == [
            #"ts=2026-11-30T16:42:08.123Z level=warning msg="unknown log level, using info" "#
                + #"variable=SPLICE_LOG_LEVEL value=chatty allowed=debug,info,warning,error"#,
        ])
    }

    @Test("context fields come before the line's own fields")
    func contextFields() {
        let sink = CapturingSink()
        let log = Logger(sink: sink, clock: fixedClock).with(["worker": "enc-1"]).with(["job": "j1"])
        log.info("segment done", ["segment": 7, "took": Duration.milliseconds(1520)])
        #expect(sink.lines.first?.hasSuffix("msg=\"segment done\" worker=enc-1 job=j1 segment=7 took=1520ms") == true)
    }

    @Test("timestamps are exact UTC with milliseconds, before and after the epoch")
    func timestamps() {
        #expect(LogFormat.timestamp(millisecondsSinceEpoch: 0) == "1970-01-01T00:00:00.000Z")
        #expect(LogFormat.timestamp(millisecondsSinceEpoch: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(LogFormat.timestamp(millisecondsSinceEpoch: 1_796_056_928_123) == "2026-11-30T16:42:08.123Z")
        #expect(LogFormat.timestamp(millisecondsSinceEpoch: 4_102_444_799_999) == "2099-12-31T23:59:59.999Z")
        #expect(LogFormat.timestamp(millisecondsSinceEpoch: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test("logging from many tasks keeps every line whole")
    func concurrentLines() async {
        let sink = CapturingSink()
        let log = Logger(sink: sink, clock: fixedClock)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<100 { log.info("tick", ["task": task, "index": index]) }
                }
            }
        }
        #expect(sink.lines.count == 800)
        #expect(sink.lines.allSatisfy { $0.hasPrefix("ts=") && $0.contains("msg=tick task=") })
    }
}

@Suite("Redaction")
struct RedactionTests {
    @Test("URL passwords are masked, user and host kept", arguments: [
        ("postgres://splice:hunter2@db.internal:5432/splice", "postgres://splice:***@db.internal:5432/splice"),
        ("postgresql://u:p%40ss@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
        ("to postgres://a:b@h1/x and postgres://c:d@h2/y", "to postgres://a:***@h1/x and postgres://c:***@h2/y"),
        ("postgres://user@host/db", "postgres://user@host/db"),
        ("tcp://10.0.0.5:7450", "tcp://10.0.0.5:7450"),
        ("postgres://u:p@ss@host/db", "postgres://u:***@host/db"),
    ])
    func urls(input: String, expected: String) {
        #expect(Redaction.redactingSecrets(in: input) == expected)
    }

    @Test("libpq password= keywords are masked", arguments: [
        ("host=db user=splice password=hunter2 dbname=x", "host=db user=splice password=*** dbname=x"),
        ("host=db password='two words' dbname=x", "host=db password=*** dbname=x"),
        ("postgres://h/db?user=u&password=pw&sslmode=disable", "postgres://h/db?user=u&password=***&sslmode=disable"),
        ("password=", "password="),
    ])
    func keywords(input: String, expected: String) {
        #expect(Redaction.redactingSecrets(in: input) == expected)
    }

    @Test("a logged connection string never shows its password")
    func loggedValues() {
        let sink = CapturingSink()
        Logger(sink: sink, clock: fixedClock).info("connecting", ["database": "postgres://splice:hunter2@db/splice"])
        #expect(sink.lines.first?.hasSuffix("database=postgres://splice:***@db/splice") == true)
        #expect(sink.lines.first?.contains("hunter2") == false)
    }
}

@Suite("LogThrottle")
struct LogThrottleTests {
    @Test("one line per key per interval, saying how many were held back")
    func throttles() {
        let throttle = LogThrottle(interval: .seconds(1))
        let start = ContinuousClock.now
        #expect(throttle.admit("garbled", now: start) == 0)
        #expect(throttle.admit("garbled", now: start + .milliseconds(10)) == nil)
        #expect(throttle.admit("garbled", now: start + .milliseconds(900)) == nil)
        #expect(throttle.admit("wrong-protocol", now: start + .milliseconds(900)) == 0, "keys are apart")
        #expect(throttle.admit("garbled", now: start + .milliseconds(1000)) == 2)
        #expect(throttle.admit("garbled", now: start + .milliseconds(3000)) == 0)
    }
}

@Suite("Logger, JSON lines")
struct JSONLogTests {
    @Test("one object per line: ts, level, msg, then the fields in order; integers and booleans bare")
    func layout() {
        let sink = CapturingSink()
        let log = Logger(format: .json, sink: sink, clock: fixedClock).with(["worker": "enc-1"])
        log.info("segment encoded", ["segment": 3, "bytes": Int64(1024), "cached": false, "took": Duration.milliseconds(15)])
        #expect(sink.lines == [
            #"{"ts":"2026-11-30T16:42:08.123Z","level":"info","msg":"segment encoded","worker":"enc-1","segment":3,"#
                + #""bytes":1024,"cached":false,"took":"15ms"}"#,
        ])
    }

    @Test("strings are escaped as JSON, passwords redacted")
    func escaping() {
        let sink = CapturingSink()
        Logger(format: .json, sink: sink, clock: fixedClock).warning("bad \"input\"", [
            "path": #"C:\a "b""# + "\n\u{1}", "url": "postgresql://splice:hunter2@db/splice",
        ])
        #expect(sink.lines == [
            #"{"ts":"2026-11-30T16:42:08.123Z","level":"warning","msg":"bad \"input\"","path":"C:\\a \"b\"\n\u0001","#
                + #""url":"postgresql://splice:***@db/splice"}"#,
        ])
        let decoded = try? JSONSerialization.jsonObject(with: Data(sink.lines[0].utf8)) as? [String: Any]
        #expect(decoded?["path"] as? String == #"C:\a "b""# + "\n\u{1}")
    }

    @Test("SPLICE_LOG_FORMAT picks the format; an unknown one falls back to logfmt with a warning")
    func environment() {
        #expect(Logger.configured(environment: ["SPLICE_LOG_FORMAT": "json"], sink: CapturingSink()).format == .json)
        #expect(Logger.configured(environment: [:], sink: CapturingSink()).format == .logfmt)
        let sink = CapturingSink()
        let log = Logger.configured(environment: ["SPLICE_LOG_FORMAT": "xml"], sink: sink, clock: fixedClock)
        #expect(log.format == .logfmt)
        #expect(sink.lines.first?.contains(#"msg="unknown log format, using logfmt" variable=SPLICE_LOG_FORMAT value=xml"#) == true)
        #expect(log.reconfigured(level: .error, format: .json).format == .json)
        #expect(log.reconfigured(level: .error).level == .error)
    }
}
