import Foundation
import SpliceCore

/// The coordinator's status page at `/`: one self-contained HTML document (no external assets),
/// its jobs and its workers. Every value that comes from a client or a worker (file names, error
/// texts, worker names) goes through ``escape(_:)``; on top of that the page forbids everything
/// but its own nonce'd style and script (Content-Security-Policy). It refreshes itself: a small
/// script fetches `/?part=main` (``main(_:)`` alone) every few seconds and swaps it in (without
/// scripting, a `<meta refresh>` reloads the page), and says so when the coordinator stops answering.
enum StatusPage {
    /// The page's headers: its content type and a policy that allows only its own style and script.
    static func headers(nonce: String) -> [(name: String, value: String)] {
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Security-Policy",
             "default-src 'none'; style-src 'nonce-\(nonce)'; script-src 'nonce-\(nonce)'; connect-src 'self'; "
                + "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
            ("Referrer-Policy", "no-referrer"),
        ]
    }

    /// A fresh nonce for one response.
    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    static func render(_ report: StatusReport, nonce: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Splice coordinator</title>
        <noscript><meta http-equiv="refresh" content="5"></noscript>
        <style nonce="\(nonce)">\(style)</style>
        </head>
        <body>
        <header><h1>Splice</h1><span id="refresh" class="muted">refreshes every 3 s</span></header>
        \(main(report))
        <footer class="muted">Also here: <a href="/metrics">/metrics</a> · <a href="/status.json">/status.json</a> · \
        <a href="/healthz">/healthz</a> · <a href="/readyz">/readyz</a>. Read-only: use <code>splice</code> to change things.</footer>
        <script nonce="\(nonce)">\(script)</script>
        </body>
        </html>

        """
    }

    /// The part that changes: the summary and the two tables.
    static func main(_ report: StatusReport) -> String {
        """
        <main id="status">
        \(summary(report))
        <h2>Jobs</h2>
        \(jobs(report))
        <h2>Workers</h2>
        \(workers(report))
        </main>

        """
    }

    // MARK: - Sections

    private static func summary(_ report: StatusReport) -> String {
        var items = [
            "coordinator <b>\(escape(report.coordinator))</b>",
            "version \(escape(report.version))",
            "up \(duration(report.uptimeSeconds))",
            report.storeUp ? "database <b class=\"ok\">up</b>"
                : "database <b class=\"bad\">not answering</b>" + (report.storeError.map { " (" + escape($0) + ")" } ?? ""),
        ]
        if let leadership = report.leadership { items.insert(leadershipItem(leadership), at: 1) }
        if let pending = report.pendingSegments { items.append("\(pending) segment\(pending == 1 ? "" : "s") queued") }
        if let leased = report.leasedSegments { items.append("\(leased) leased") }
        let connected = report.workers.filter { $0.status != "registering" }
        let slots = connected.reduce(0) { $0 + $1.slots }, busy = connected.reduce(0) { $0 + $1.busy }
        items.append("\(connected.count) worker\(connected.count == 1 ? "" : "s"), \(busy)/\(slots) slots busy")
        return "<p class=\"summary\">" + items.joined(separator: " · ") + "</p>"
    }

    /// Which coordinator is active: this one (`active`, with its epoch), or another one, named
    /// and linked (its status page is where the live view of the workers is).
    private static func leadershipItem(_ leadership: StatusReport.Leadership) -> String {
        if leadership.role == "active" {
            return "<span id=\"leadership\"><b class=\"ok\">active</b> (epoch \(leadership.epoch))</span>"
        }
        guard let name = leadership.activeName else {
            return "<span id=\"leadership\"><b class=\"bad\">standby</b>: no coordinator is active right now</span>"
        }
        let page = leadership.activeStatusPage.map {
            " <a href=\"\(escape($0))\">\(escape($0))</a>"
        } ?? ""
        return "<span id=\"leadership\"><b>standby</b>: the active coordinator is <b>\(escape(name))</b>"
            + " (\(escape(leadership.activeAPI ?? "?")), epoch \(leadership.epoch))\(page)</span>"
    }

    private static func jobs(_ report: StatusReport) -> String {
        guard !report.jobs.isEmpty else {
            return report.storeUp ? "<p class=\"muted\">No jobs yet: <code>splice submit IN OUT</code> adds one.</p>"
                : "<p class=\"bad\">The jobs cannot be read while the database does not answer.</p>"
        }
        var rows = ""
        for job in report.jobs {
            let percent = Int((job.fraction * 100).rounded(.down))
            let segments = job.segmentsTotal.map { "\(job.segmentsDone)/\($0)" } ?? "—"
            let eta = job.etaSeconds.map(duration) ?? "—"
            var note = job.error ?? job.waiting.map { "waiting: " + $0 } ?? ""
            if note.isEmpty, let finished = job.finishedAt {
                note = "finished \(duration(Int(report.generatedAt.timeIntervalSince(finished)))) ago"
            }
            if job.backupsStarted > 0 {
                note += (note.isEmpty ? "" : "; ") + "backups: \(job.backupsStarted) started, \(job.backupsWon) won"
            }
            rows += """
                <tr class="job">\
                <td><code title="\(escape(job.id))">\(escape(String(job.id.prefix(8))))</code>\
                <div class="path" title="\(escape(job.input))">\(escape(job.input))</div>\
                <div class="path" title="\(escape(job.output))">→ \(escape(job.output))</div></td>\
                <td><span class="state \(stateClass(job.state))">\(escape(job.state.rawValue))</span></td>\
                <td class="progress"><progress value="\(String(format: "%.3f", job.fraction))" max="1">\(percent)%</progress> \
                \(percent)%</td>\
                <td class="num">\(segments)</td><td class="num">\(eta)</td>\
                <td class="num\(job.failedAttempts > 0 ? " warn" : "")">\(job.failedAttempts)</td>\
                <td class="num">\(quality(job))</td>\
                <td class="note\(job.error != nil ? " bad" : "")">\(escape(note))</td></tr>

                """
        }
        return """
            <table id="jobs"><thead><tr><th>Job</th><th>State</th><th>Progress</th><th class="num">Segments</th>\
            <th class="num">ETA</th><th class="num" title="attempts that ended without a result">Failures</th>\
            <th class="num" title="luma PSNR and SSIM of the segments measured so far (--verify, --target-quality)">Quality</th>\
            <th>Note</th></tr></thead>
            <tbody>
            \(rows)</tbody></table>
            """
    }

    private static func workers(_ report: StatusReport) -> String {
        guard !report.workers.isEmpty else {
            return "<p class=\"muted\">No worker is connected: start <code>splice worker</code>.</p>"
        }
        var rows = ""
        for worker in report.workers {
            let segments = worker.segments.isEmpty ? "<span class=\"muted\">idle</span>"
                : worker.segments.map {
                    "<span class=\"segment\" title=\"job \(escape($0.job)) attempt \($0.attempt)\">"
                        + "\(escape(String($0.job.prefix(8))))#\($0.segment) \(Int(($0.fraction * 100).rounded(.down)))%</span>"
                }.joined(separator: " ")
            let fps = worker.framesPerSecond.map { String(format: "%.1f", $0) } ?? "—"
            var status = escape(worker.status)
            if worker.status == "quarantined" {
                status += " " + (worker.quarantineSeconds.map { duration($0) } ?? "")
                    + (worker.quarantineReason.map { ": " + escape($0) } ?? "")
            }
            rows += """
                <tr class="worker"><td><b>\(escape(worker.name))</b>\
                <div class="path" title="\(escape(worker.identity))">\(escape(String(worker.identity.prefix(16))))</div>\
                <div class="path" title="the worker-protocol version it speaks">protocol \(worker.protocolVersion)</div></td>\
                <td class="num">\(worker.busy)/\(worker.slots)</td><td>\(segments)</td><td class="num">\(fps)</td>\
                <td class="\(worker.status == "ok" ? "ok" : "warn")">\(status)</td></tr>

                """
        }
        return """
            <table id="workers"><thead><tr><th>Worker</th><th class="num">Busy</th><th>Current segments</th>\
            <th class="num" title="frames of the segments completed over the last minute, per second">Frames/s</th>\
            <th>Status</th></tr></thead>
            <tbody>
            \(rows)</tbody></table>
            """
    }

    // MARK: - Text

    /// Text safe inside an element and inside a quoted attribute: `& < > " '` as entities.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default:
                // Control characters have no business in a page; show them as the replacement character.
                if character.value < 0x20 && character != "\t" || character.value == 0x7F {
                    escaped += "\u{FFFD}"
                } else {
                    escaped.unicodeScalars.append(character)
                }
            }
        }
        return escaped
    }

    /// `45s`, `3m 20s`, `2h 05m`, `3d 4h`.
    static func duration(_ seconds: Int) -> String {
        let seconds = max(0, seconds)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m \(pad(seconds % 60))s" }
        if seconds < 86400 { return "\(seconds / 3600)h \(pad(seconds / 60 % 60))m" }
        return "\(seconds / 86400)d \(seconds / 3600 % 24)h"
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// "41.20 dB · 0.9871", or an em dash before any segment was measured.
    private static func quality(_ job: StatusReport.Job) -> String {
        guard let psnr = job.psnrY, let ssim = job.ssimY else { return "—" }
        return String(format: "%.2f dB · %.4f", psnr, ssim)
    }

    private static func stateClass(_ state: JobState) -> String {
        "state-" + state.rawValue
    }

    // MARK: - Style and script

    private static let style = """
        :root{color-scheme:light dark;--fg:#1d2430;--muted:#6b7280;--bg:#fff;--line:#e5e7eb;--ok:#15803d;--bad:#b91c1c;\
        --warn:#b45309;--accent:#2563eb}
        @media (prefers-color-scheme:dark){:root{--fg:#e5e7eb;--muted:#9ca3af;--bg:#111827;--line:#374151;--ok:#4ade80;\
        --bad:#f87171;--warn:#fbbf24;--accent:#60a5fa}}
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);\
        margin:0 auto;max-width:1200px;padding:16px 24px}
        header{display:flex;align-items:baseline;gap:16px}h1{font-size:22px;margin:0}h2{font-size:16px;margin:24px 0 8px}
        table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);\
        vertical-align:top}th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase}
        .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
        .path{color:var(--muted);font-size:12px;max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        .progress{white-space:nowrap}progress{width:120px;vertical-align:middle;accent-color:var(--accent)}
        .state{display:inline-block;padding:0 8px;border-radius:9px;border:1px solid var(--line);font-size:12px}
        .state-running,.state-stitching,.state-planning{border-color:var(--accent);color:var(--accent)}
        .state-succeeded{border-color:var(--ok);color:var(--ok)}.state-failed{border-color:var(--bad);color:var(--bad)}
        .segment{display:inline-block;margin:0 6px 2px 0;padding:0 6px;border-radius:4px;background:var(--line);\
        font-size:12px;font-variant-numeric:tabular-nums}
        .muted{color:var(--muted)}.ok{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}
        .note{max-width:320px;overflow-wrap:anywhere}.summary{margin:8px 0}
        footer{margin-top:24px;font-size:12px}a{color:var(--accent)}#refresh.stale{color:var(--bad)}
        """

    private static let script = """
        (function () {
          var note = document.getElementById("refresh");
          function refresh() {
            fetch("/?part=main", {cache: "no-store"}).then(function (response) {
              if (!response.ok) { throw new Error("HTTP " + response.status); }
              return response.text();
            }).then(function (text) {
              var parsed = new DOMParser().parseFromString("<!doctype html><body>" + text, "text/html");
              var next = parsed.getElementById("status");
              if (next) { document.getElementById("status").replaceWith(document.importNode(next, true)); }
              note.textContent = "updated " + new Date().toLocaleTimeString();
              note.className = "muted";
            }).catch(function (error) {
              note.textContent = "the coordinator is not answering (" + error.message + "); retrying";
              note.className = "stale";
            });
          }
          setInterval(refresh, 3000);
        })();
        """
}
