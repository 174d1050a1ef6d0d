import Foundation
import Synchronization

/// How much fault each scenario injects. `SPLICE_FAULT_SOAK=1` runs every scenario 5 times with
/// twice the faults (20 worker kills, 10 coordinator kills per job); `SPLICE_FAULT_SOAK=N` (N ≥ 2)
/// runs it N times.
enum FaultRuns {
    static let soakSetting = ProcessInfo.processInfo.environment["SPLICE_FAULT_SOAK"].flatMap { value in
        value.isEmpty || value == "0" ? nil : value
    }
    static var isSoak: Bool { soakSetting != nil }
    /// Runs per scenario.
    static var count: Int {
        guard let soakSetting else { return 1 }
        if let runs = Int(soakSetting), runs >= 2 { return runs }
        return 5
    }
    static var workerKills: Int { isSoak ? 20 : 10 }
    static var coordinatorKills: Int { isSoak ? 10 : 5 }
}

/// One run's figures: the Jepsen-style counts, the oracle's verdict, the wall time and the
/// scenario's own numbers (kills, outage length…).
struct RunFigures: Sendable {
    var outcome: String
    var committedTwice: Int
    var lost: Int
    var unexpected: Int
    /// "yes", "no", or "n/a" for a job that is meant to produce no output.
    var exact: String
    var wallSeconds: Double
    /// Scenario-specific `key=value` figures, in order.
    var extra: [(String, String)] = []

    /// A run that produced no job to count (it was refused before the store had one).
    init(outcome: String, wall: Duration) {
        self.outcome = outcome
        committedTwice = 0
        lost = 0
        unexpected = 0
        exact = "n/a"
        wallSeconds = Self.seconds(wall)
    }

    init(ledger: SegmentLedger, output: OutputCheck?, wall: Duration, extra: [(String, String)] = []) {
        outcome = ledger.outcome
        committedTwice = ledger.committedTwice
        lost = ledger.lost
        unexpected = ledger.unexpected
        exact = output.map { $0.exact ? "yes" : "no" } ?? "n/a"
        wallSeconds = Self.seconds(wall)
        self.extra = extra
        if let output, output.exists {
            self.extra.insert(("frames", "\(output.frames)/\(output.referenceFrames)"), at: 0)
            self.extra.insert(("samples", "\(output.samples)/\(output.referenceSamples)"), at: 1)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Prints one line per scenario in the same shape every time, e.g.
///
///     fault scenario=garbage runs=1 outcome=completed committed_twice=0 lost=0 unexpected=0 exact=yes
///         wall_s=1.9 frames=720/720 samples=1152000/1152000 garbage_rounds=4 … (one line)
///
/// With several runs, each run prints its line (`run=2/5` in place of `runs=`) and a summary
/// follows: counts summed, outcomes listed once each, the wall time as `min..max`, and a
/// scenario figure that differs between runs as `a;b;c`. Every line is also appended to
/// `$SPLICE_FAULT_FIGURES` when that names a file.
struct ScenarioFigures: Sendable {
    let scenario: String
    private(set) var runs: [RunFigures] = []

    init(_ scenario: String) { self.scenario = scenario }

    /// Prints the run's line; with `$SPLICE_FAULT_LOGS` naming a folder, also writes every
    /// process's log there as `<scenario>-<run>.log`.
    mutating func record(_ run: RunFigures, logs: String) {
        runs.append(run)
        if let folder = ProcessInfo.processInfo.environment["SPLICE_FAULT_LOGS"], !folder.isEmpty {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let file = URL(fileURLWithPath: folder).appendingPathComponent("\(scenario)-\(runs.count).log")
            try? Data(logs.utf8).write(to: file)
        }
        print(line(of: [run], label: FaultRuns.count == 1 ? nil : "\(runs.count)/\(FaultRuns.count)"))
    }

    /// Prints the summary (only when there was more than one run: one run's line is its summary).
    func finish() {
        guard runs.count > 1 else { return }
        print(line(of: runs, label: nil))
    }

    private func line(of runs: [RunFigures], label: String?) -> String {
        let walls = runs.map(\.wallSeconds)
        let wall = walls.count == 1
            ? format(walls[0]) : "\(format(walls.min() ?? 0))..\(format(walls.max() ?? 0))"
        var fields: [(String, String)] = [
            ("scenario", scenario), ("runs", "\(runs.count)"),
            ("outcome", unique(runs.map(\.outcome)).joined(separator: ",")),
            ("committed_twice", "\(runs.map(\.committedTwice).reduce(0, +))"),
            ("lost", "\(runs.map(\.lost).reduce(0, +))"),
            ("unexpected", "\(runs.map(\.unexpected).reduce(0, +))"),
            ("exact", unique(runs.map(\.exact)).joined(separator: ",")),
            ("wall_s", wall),
        ]
        if let label { fields[1] = ("run", label) }
        var keys: [String] = []
        for run in runs { for (key, _) in run.extra where !keys.contains(key) { keys.append(key) } }
        for key in keys {
            let values = runs.map { run in run.extra.first { $0.0 == key }?.1 ?? "-" }
            fields.append((key, unique(values).count == 1 ? values[0] : values.joined(separator: ";")))
        }
        let text = "fault " + fields.map { "\($0.0)=\(quoted($0.1))" }.joined(separator: " ")
        Self.append(text)
        return text
    }

    private func unique(_ values: [String]) -> [String] {
        var seen: [String] = []
        for value in values where !seen.contains(value) { seen.append(value) }
        return seen
    }

    private func format(_ seconds: Double) -> String { String(format: "%.1f", seconds) }

    private func quoted(_ value: String) -> String {
        value.contains(" ") || value.contains("\"") ? "\"" + value.replacing("\"", with: "'") + "\"" : value
    }

    private static let file = Mutex<FileHandle?>(nil)

    private static func append(_ line: String) {
        guard let path = ProcessInfo.processInfo.environment["SPLICE_FAULT_FIGURES"], !path.isEmpty else { return }
        file.withLock { handle in
            if handle == nil {
                if !FileManager.default.fileExists(atPath: path) {
                    FileManager.default.createFile(atPath: path, contents: nil)
                }
                handle = FileHandle(forWritingAtPath: path)
            }
            _ = try? handle?.seekToEnd()
            try? handle?.write(contentsOf: Data((line + "\n").utf8))
        }
    }
}
