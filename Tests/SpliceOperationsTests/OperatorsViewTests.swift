import Foundation
import SpliceTestSupport
import Testing

/// The operators' view of a real cluster: `splice coordinator` and two `splice worker`s as child
/// processes, each with its operations endpoint on a loopback port of its own. One job runs to the
/// end and every figure is checked against what the store, the output file (ffprobe) and the
/// processes say happened; `promtool check metrics` (Prometheus's own linter) judges both
/// endpoints' real output; a second, slower job is watched running on the status page — its file
/// name full of HTML — and photographed by headless Chromium, then cancelled.
@Suite("Operators' view", .serialized, .timeLimit(.minutes(6)))
struct OperatorsViewTests {
    /// 6 s of 320×240 at 30 fps with a keyframe a second: six 1-s segments.
    static let clip = Fixtures.ClipSpec(
        seconds: "6", width: 320, height: 240,
        videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30",
                     "-sc_threshold", "0", "-pix_fmt", "yuv420p"])
    /// A file name with everything a page must escape.
    static let hostileName = #"clip <script>alert(1)</script> "q" 'a' & b"#.replacing("/", with: "∕")

    @Test("a 6-segment job: the figures agree with it, promtool accepts both endpoints, the page shows it escaped")
    func realJob() async throws {
        let folder = Fixtures.temporaryDirectory("operators")
        let input = folder.appendingPathComponent(Self.hostileName + ".mp4").path
        try FileManager.default.copyItem(atPath: try await Fixtures.clip(Self.clip), toPath: input)
        // No backup attempts: a straggler's backup is a second encode of one segment, which the
        // workers count and the coordinator (committing one result) does not — another test's.
        let cluster = try await LocalCluster.start(workers: 2, coordinatorFlags: ["--backup-after", "0"])
        try await withCleanup({ _ = try? await cluster.stop() }) {
            let coordinator = try #require(cluster.coordinator.metrics, "no operations endpoint logged")
            let workers = try cluster.workers.map { try #require($0.metrics, "\($0.name) logged no operations endpoint") }

            // Before: a fresh process has counted nothing.
            let before = try await scrape(coordinator)
            #expect(before.value("splice_segments_completed_total") == 0)
            #expect(before.value("splice_workers_connected") == 2)

            // The job.
            let output = cluster.outputPath(Self.hostileName + " out.mp4")
            let submit = try await SpliceProcess.run(
                ["submit", input, output, "--wait", "--coordinator", cluster.coordinator.api, "--segment-seconds", "1",
                 "--preset", "ultrafast", "--crf", "26"], timeout: .seconds(180))
            #expect(submit.status == 0, "\(submit.stderr)\n\(cluster.logs)")
            let job = try #require(SpliceProcess.submittedJob(in: submit.stderr))
            let stored = try #require(try await cluster.job(job))
            let events = try await cluster.events(of: job)
            let leased = events.filter { $0.kind == "segment_leased" }.count
            let failed = events.filter {
                ["segment_failed", "segment_lease_expired", "segment_lease_released", "segment_returned"].contains($0.kind)
            }.count
            let frames = try #require(try await Probe(output, countFrames: true).first("video")?.readFrames)
            #expect(stored.segmentsTotal == 7, "six video segments and one of audio")
            #expect(frames == 180)

            // The coordinator's figures agree with the store.
            let after = try await scrape(coordinator)
            #expect(after.value("splice_segments_completed_total") == Double(stored.segmentsTotal))
            #expect(after.value("splice_segment_encode_seconds_count") == Double(stored.segmentsTotal))
            #expect(after.value("splice_dispatch_latency_seconds_count") == Double(leased))
            #expect(after.value("splice_segment_attempts_failed_total") == Double(failed))
            #expect(after.value("splice_stitch_seconds_count") == 1)
            #expect(after.value("splice_job_duration_seconds_count") == 1)
            let duration = try #require(after.value("splice_job_duration_seconds_sum"))
            let storedDuration = try #require(stored.finishedAt).timeIntervalSince(stored.createdAt)
            #expect(abs(duration - storedDuration) < 0.01)
            // The database gauges are read at most once a second (scrapes share a read): a job that
            // finished within a second of the first scrape shows at the next read.
            let settled = await eventually(within: .seconds(10)) {
                (try? await scrape(coordinator))?.value("splice_jobs", ["state": "succeeded"]) == 1
            }
            #expect(settled, "splice_jobs never showed the finished job")
            let later = try await scrape(coordinator)
            #expect(later.value("splice_jobs", ["state": "succeeded"]) == 1)
            #expect(later.value("splice_jobs") == 1)
            #expect(later.value("splice_queue_segments") == 0)
            #expect(after.value("splice_store_up") == 1)
            #expect(after.value("splice_build_info", ["version": "0.1.0"]) == 1)
            #expect(after.value("splice_cluster_slots") == 2)
            #expect(after.value("splice_cluster_slots", ["state": "idle"]) == 2)
            #expect(after.value("process_resident_memory_bytes").map { $0 > 0 } == true)
            #expect(after.value("process_open_fds").map { $0 > 0 } == true)

            // The workers' figures add up to the same job: segments, and frames equal to those written.
            var encodeSeconds = 0.0
            var completed = 0.0
            var encodedFrames = 0.0
            for worker in workers {
                let figures = try await scrape(worker)
                #expect(figures.value("splice_worker_slots") == 1)
                #expect(figures.value("splice_worker_registered") == 1)
                #expect(figures.value("splice_worker_busy_slots") == 0)
                #expect(figures.value("splice_worker_segments_total", ["outcome": "failed"]) == 0)
                completed += figures.value("splice_worker_segments_total", ["outcome": "completed"]) ?? -1
                encodedFrames += figures.value("splice_worker_encoded_frames_total") ?? -1
                encodeSeconds += figures.value("splice_worker_encode_seconds_total") ?? -1
            }
            #expect(completed == Double(stored.segmentsTotal))
            #expect(encodedFrames == Double(frames))
            // Both sides add the same reported milliseconds.
            #expect(abs(encodeSeconds - (after.value("splice_segment_encode_seconds_sum") ?? -1)) < 0.01)

            // Health and readiness; a read-only endpoint.
            for address in [coordinator] + workers {
                #expect(await HTTPFetch.get(address, "/healthz")?.status == 200)
                #expect(await HTTPFetch.get(address, "/readyz")?.status == 200)
                #expect(await HTTPFetch.get(address, "/metrics", method: "POST")?.status == 405)
                #expect(await HTTPFetch.get(address, "/nothing")?.status == 404)
            }
            let worker = try await scrape(workers[0])
            try checkDeployFiles(against: after.text + worker.text)
            try checkDocumentedMetrics(coordinator: after.text)
            // One name, one meaning: a family both endpoints serve is described the same on both.
            let coordinatorHelp = helpLines(after.text), workerHelp = helpLines(worker.text)
            for (family, help) in coordinatorHelp {
                if let other = workerHelp[family] {
                    #expect(help == other, "\(family) means one thing on the coordinator, another on a worker")
                }
            }
            #expect(workerHelp["splice_worker_slots"] != nil && coordinatorHelp["splice_worker_slots"] == nil)

            // The status page after the job: its names escaped, nothing of them left raw.
            let page = try #require(await HTTPFetch.get(coordinator, "/"))
            #expect(page.status == 200)
            #expect(page.headers["content-security-policy"]?.contains("script-src 'nonce-") == true)
            checkEscaped(page.body)
            #expect(page.body.contains("succeeded"))
        }
    }

    @Test("a running job and busy workers on the status page, in a real browser (headless Chromium)")
    func statusPageInBrowser() async throws {
        let folder = Fixtures.temporaryDirectory("operators-page")
        let input = folder.appendingPathComponent(Self.hostileName + ".mp4").path
        var slow = Self.clip
        slow.seconds = "20"
        slow.width = 640
        slow.height = 360
        try FileManager.default.copyItem(atPath: try await Fixtures.clip(slow), toPath: input)
        let cluster = try await LocalCluster.start(workers: 2)
        try await withCleanup({ _ = try? await cluster.stop() }) {
            let coordinator = try #require(cluster.coordinator.metrics)
            let submit = try await SpliceProcess.run(
                ["submit", input, cluster.outputPath("slow.mp4"), "--coordinator", cluster.coordinator.api,
                 "--segment-seconds", "1", "--preset", "veryslow"])
            #expect(submit.status == 0, "\(submit.stderr)")
            let job = submit.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

            // Watch /status.json until the job runs on both workers and has a few segments done
            // (so the picture shows progress, an ETA and frames per second).
            var running: [String: Any]?
            _ = await eventually(within: .seconds(180)) {
                guard let report = await statusJSON(coordinator),
                      let jobs = report["jobs"] as? [[String: Any]], let workers = report["workers"] as? [[String: Any]],
                      jobs.first?["state"] as? String == "running", (jobs.first?["segmentsDone"] as? Int ?? 0) >= 2,
                      workers.count == 2, workers.allSatisfy({ ($0["busy"] as? Int) == 1 })
                else { return false }
                running = report
                return true
            }
            let report = try #require(running, "the job was never seen running on both workers\n\(cluster.logs)")
            let jobs = try #require(report["jobs"] as? [[String: Any]])
            #expect(jobs.first?["id"] as? String == job)
            #expect((jobs.first?["input"] as? String)?.hasSuffix(Self.hostileName + ".mp4") == true)

            let page = try #require(await HTTPFetch.get(coordinator, "/"))
            checkEscaped(page.body)
            #expect(page.body.contains("state-running"))
            #expect(page.body.contains("<b>w0</b>") && page.body.contains("<b>w1</b>"))
            #expect(page.body.contains("<progress"))

            // A real browser: the page renders, its script may run (CSP allows its nonce only) and
            // refreshes it, and the hostile name is text, not markup.
            let shot = try await Browser.screenshot("http://\(coordinator)/", name: "status-page.png")
            #expect(shot.bytes > 10_000, "screenshot at \(shot.path) is \(shot.bytes) bytes")
            let dom = try await Browser.dom("http://\(coordinator)/")
            #expect(dom.html.contains("updated "), "the page's refresh script did not run:\n\(dom.console)")
            #expect(!dom.console.contains("Content Security Policy") && !dom.console.contains("Refused to"),
                    "\(dom.console)")
            // The browser's own serialisation: < and > in text stay escaped, quotes need not be.
            #expect(dom.html.contains("clip &lt;script&gt;alert(1)&lt;∕script&gt;"))
            #expect(!dom.html.contains("<script>alert"))
            #expect(dom.html.components(separatedBy: "<script").count == 2)
            print("status page screenshot: \(shot.path)")

            let cancel = try await SpliceProcess.run(["cancel", job, "--coordinator", cluster.coordinator.api])
            #expect(cancel.status == 0, "\(cancel.stderr)")
            #expect(await eventually(within: .seconds(60)) {
                (try? await scrape(coordinator))?.value("splice_jobs", ["state": "cancelled"]) == 1
            })
        }
    }

    // MARK: - Helpers

    /// `/metrics` of `address`, checked by `promtool check metrics` on the way.
    private func scrape(_ address: String) async throws -> MetricsText {
        let response = try #require(await HTTPFetch.get(address, "/metrics"), "no answer from \(address)/metrics")
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let file = Fixtures.temporaryDirectory("scrape").appendingPathComponent("metrics.txt")
        try response.body.write(to: file, atomically: true, encoding: .utf8)
        let lint = try await ExternalTool.run("sh", ["-c", "promtool check metrics < '\(file.path)'"])
        #expect(lint.status == 0 && lint.stderr.isEmpty && lint.text.isEmpty,
                "promtool check metrics on \(address): \(lint.text)\(lint.stderr)")
        return MetricsText(response.body)
    }

    /// Each family's `# HELP` text.
    private func helpLines(_ exposition: String) -> [String: String] {
        var help: [String: String] = [:]
        for line in exposition.split(separator: "\n") where line.hasPrefix("# HELP ") {
            let words = line.dropFirst("# HELP ".count).split(separator: " ", maxSplits: 1)
            if words.count == 2 { help[String(words[0])] = String(words[1]) }
        }
        return help
    }

    private func statusJSON(_ address: String) async -> [String: Any]? {
        guard let response = await HTTPFetch.get(address, "/status.json"), response.status == 200 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(response.body.utf8))) as? [String: Any]
    }

    /// The hostile name appears only escaped; the page's own script is its only one.
    private func checkEscaped(_ html: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(html.contains("clip &lt;script&gt;alert(1)&lt;∕script&gt; &quot;q&quot; &#39;a&#39; &amp; b"),
                sourceLocation: sourceLocation)
        #expect(!html.contains("<script>alert"), sourceLocation: sourceLocation)
        #expect(!html.contains("\"q\" 'a'"), sourceLocation: sourceLocation)
        #expect(html.components(separatedBy: "<script").count == 2, "more than the page's own script",
                sourceLocation: sourceLocation)
    }
}
