import Foundation
import SpliceCore

/// A ``QualityReport`` as one self-contained HTML page (no script, no outside file): the verdict
/// and its problems, an inline SVG plot of every frame's PSNR (luma) and SSIM over output time
/// with the joins marked (red where one failed) and the `--min-psnr` line, a table of segments,
/// the joins and the audio checks. `splice verify --report`, and a verified job's report.
public struct QualityReportPage: Sendable {
    public let report: QualityReport

    public init(report: QualityReport) {
        self.report = report
    }

    /// The page.
    public var html: String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>Quality of \(escape(name(report.output)))</title>
            <style>
            body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;background:#fff}
            h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
            .pass{color:#17803d} .fail{color:#c0262d} .muted{color:#5c6670}
            table{border-collapse:collapse;margin:4px 0} td,th{padding:3px 10px;border-bottom:1px solid #dde2e6;text-align:right}
            th{background:#f3f5f7} td:first-child,th:first-child{text-align:left}
            tr.bad td{background:#fdecec} svg{background:#fafbfc;border:1px solid #dde2e6}
            </style></head><body>
            <h1>\(escape(name(report.output))): <span class="\(report.passed ? "pass" : "fail")">\(report.passed ? "passed" : "failed")</span></h1>
            <p class="muted">Output <code>\(escape(report.output))</code> against source <code>\(escape(report.source))</code>; \
            segments from the \(report.segmentsFrom == "plan" ? "job's plan" : "output's keyframes"); VMAF \(escape(report.vmaf)).</p>

            """
        if let q = report.overall {
            page += "<p>Whole output: \(q.frames) frames, PSNR Y \(f2(q.psnrY)) dB (all planes \(f2(q.psnr)) dB), "
                + "SSIM Y \(f4(q.ssimY)) (all \(f4(q.ssim))); worst frame \(f2(q.minPSNRY)) dB; worst second "
                + "\(f2(q.worstSecondPSNRY)) dB from \(q.worstSecondStartMilliseconds.clock).</p>\n"
        }
        page += "<p>Frames: \(report.frames.output) in the output, \(report.frames.expected) from the source.</p>\n"
        if !report.problems.isEmpty {
            page += "<h2>Problems</h2>\n<ul>\n"
            for problem in report.problems { page += "<li class=\"fail\">\(escape(problem.message))</li>\n" }
            page += "</ul>\n"
        }
        page += "<h2>Every frame</h2>\n" + plot() + "\n"
        page += segmentTable() + joinTable() + audioTables()
        let t = report.thresholds
        page += "<h2>Thresholds</h2>\n<p class=\"muted\">--min-psnr \(t.minPSNR), --min-ssim \(t.minSSIM), "
            + "--min-second-psnr \(t.minSecondPSNR), --max-join-dip \(t.maxJoinDip), --max-audio-join-drop "
            + "\(t.maxAudioJoinDrop), --max-av-offset-ms \(t.maxAVOffsetMilliseconds)</p>\n</body></html>\n"
        return page
    }

    // MARK: - The plot

    private func plot() -> String {
        guard let series = report.series, series.count > 0 else { return "<p class=\"muted\">No frames were measured.</p>" }
        let width = 1000.0, height = 320.0, left = 48.0, right = 48.0, top = 12.0, bottom = 28.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let times = (0..<series.count).map { Double(series.time($0).converted(to: 1_000_000).value) / 1e6 }
        let psnr = (0..<series.count).map { series.psnrY($0) }
        let span = max(1e-3, (times.last ?? 0) - (times.first ?? 0))
        let t0 = times.first ?? 0
        let low = max(0, min(psnr.min() ?? 0, report.thresholds.minPSNR) - 2).rounded(.down)
        let high = min(QualitySeries.identicalPSNR, (psnr.max() ?? 50) + 2).rounded(.up)
        let x = { (t: Double) in left + (t - t0) / span * plotWidth }
        let y = { (v: Double) in top + (1 - (min(high, max(low, v)) - low) / max(1, high - low)) * plotHeight }
        let ssimLow = max(0, ((min(0.99, series.ssimY.min() ?? 0.9) * 100).rounded(.down) - 1) / 100)
        let ys = { (v: Double) in top + (1 - (v - ssimLow) / max(1e-6, 1 - ssimLow)) * plotHeight }
        // At most one point per horizontal pixel, the lowest of those it stands for (dips stay visible).
        func line(_ values: [Double], _ map: (Double) -> Double) -> String {
            var buckets: [Int: (Double, Double)] = [:]
            for (i, v) in values.enumerated() {
                let px = Int(x(times[i]))
                if let b = buckets[px], b.1 <= v { continue }
                buckets[px] = (times[i], v)
            }
            return buckets.keys.sorted().map { k in
                let (t, v) = buckets[k]!
                return String(format: "%.1f,%.1f", x(t), map(v))
            }.joined(separator: " ")
        }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"per-frame PSNR and SSIM\">\n"
        let steps = 5
        for s in 0...steps {
            let v = low + (high - low) * Double(s) / Double(steps)
            svg += String(format: "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e7ea\"/>", left,
                          width - right, y(v), y(v))
            svg += String(format: "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"#5c6670\">%.0f</text>\n",
                          left - 4, y(v) + 4, v)
            let sv = ssimLow + (1 - ssimLow) * Double(s) / Double(steps)
            svg += String(format: "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" fill=\"#8a5a00\">%.3f</text>\n",
                          width - right + 4, ys(sv) + 4, sv)
        }
        for s in 0...5 {
            let t = t0 + span * Double(s) / 5
            svg += String(format: "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\" fill=\"#5c6670\">%.1f s</text>\n",
                          x(t), height - 8, t)
        }
        for join in report.videoJoins {
            let jx = x(Double(join.timeMilliseconds) / 1000)
            let colour = join.passed ? "#7a8793" : "#c0262d"
            svg += String(format: "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" ", jx, jx, top, height - bottom)
                + "stroke=\"\(colour)\" stroke-dasharray=\"4 3\"/>"
            svg += String(format: "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" ", jx + 2, top + 10)
                + "fill=\"\(colour)\">\(join.segment)</text>\n"
        }
        svg += String(format: "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c0262d\" stroke-width=\"0.8\"/>\n",
                      left, width - right, y(report.thresholds.minPSNR), y(report.thresholds.minPSNR))
        svg += "<polyline fill=\"none\" stroke=\"#d08a00\" stroke-width=\"1\" points=\"\(line(series.ssimY, ys))\"/>\n"
        svg += "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.2\" points=\"\(line(psnr, y))\"/>\n"
        svg += "</svg>\n<p class=\"muted\">Blue: PSNR Y (dB, left); orange: SSIM Y (right); dashed: joins (the number is "
            + "the segment that starts there); red line: --min-psnr.</p>"
        return svg
    }

    // MARK: - Tables

    private func segmentTable() -> String {
        var html = "<h2>Segments</h2>\n<table><tr><th>segment</th><th>from</th><th>to</th><th>frames</th><th>PSNR Y</th>"
            + "<th>PSNR</th><th>SSIM Y</th><th>worst frame</th><th>worst second</th><th>CRF</th><th>kbit/s</th></tr>\n"
        for s in report.segments {
            let q = s.quality
            html += "<tr\(s.passed ? "" : " class=\"bad\"")><td>\(s.index)</td><td>\(s.startMilliseconds.clock)</td>"
                + "<td>\(s.endMilliseconds.clock)</td><td>\(q.map { "\($0.frames)" } ?? "-")</td>"
                + "<td>\(q.map { f2($0.psnrY) } ?? "-")</td><td>\(q.map { f2($0.psnr) } ?? "-")</td>"
                + "<td>\(q.map { f4($0.ssimY) } ?? "-")</td><td>\(q.map { f2($0.minPSNRY) } ?? "-")</td>"
                + "<td>\(q.map { "\(f2($0.worstSecondPSNRY)) at \($0.worstSecondStartMilliseconds.clock)" } ?? "-")</td>"
                + "<td>\(s.figures?.crf.map { String(format: "%g", $0) } ?? "-")</td>"
                + "<td>\(s.figures?.videoBitsPerSecond.map { "\($0 / 1000)" } ?? "-")</td></tr>\n"
        }
        return html + "</table>\n"
    }

    private func joinTable() -> String {
        guard !report.videoJoins.isEmpty else { return "" }
        var html = "<h2>Video joins</h2>\n<table><tr><th>segment starting</th><th>at</th><th>dip (dB)</th></tr>\n"
        for j in report.videoJoins {
            html += "<tr\(j.passed ? "" : " class=\"bad\"")><td>\(j.segment)</td><td>\(j.timeMilliseconds.clock)</td>"
                + "<td>\(f2(j.dip))</td></tr>\n"
        }
        return html + "</table>\n"
    }

    private func audioTables() -> String {
        var html = ""
        for track in report.audio {
            html += "<h2>Audio track \(track.track + 1)</h2>\n<p>\(track.outputSamples) samples at \(track.sampleRate) Hz "
                + "(source: \(track.expectedSamples)); starts \(String(format: "%+.3f", track.avOffsetMilliseconds)) ms "
                + "against the video compared with the source; median block SNR \(f2(track.medianBlockSNR)) dB.</p>\n"
                + "<table><tr><th>where</th><th>at</th><th>lag (samples)</th><th>block under median (dB)</th></tr>\n"
            for p in track.points {
                let place = p.kind == "join" ? "join (segment \(p.segment ?? 0))" : p.kind
                html += "<tr\(p.passed ? "" : " class=\"bad\"")><td>\(place)</td><td>\(p.timeMilliseconds.clock)</td>"
                    + "<td>\(p.lag)</td><td>\(p.drop.map(f2) ?? "-")</td></tr>\n"
            }
            html += "</table>\n"
        }
        return html
    }

    // MARK: - Text

    private func f2(_ v: Double) -> String { String(format: "%.2f", v) }
    private func f4(_ v: Double) -> String { String(format: "%.4f", v) }
    private func name(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    private func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
