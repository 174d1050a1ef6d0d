import Foundation
import SpliceStore
import SpliceTestSupport
import Testing

/// The deployment files, checked without a cluster: `Deploy/check-deploy.py` (PyYAML) over the
/// Kubernetes manifests as the kustomization assembles them, and over `kubectl kustomize`'s own
/// output when kubectl is installed; `promtool` over the Prometheus configuration and alert
/// rules; the KEDA role's privileges on a real database.
@Suite("Deployment files", .timeLimit(.minutes(2)))
struct DeployFilesTests {
    static let deploy = Fixtures.packageRoot.appendingPathComponent("Deploy")

    @Test("the manifests, the Dockerfile, the KEDA objects, the dashboard and the compose file hold together")
    func manifests() async throws {
        // Every ZeroMQ endpoint `splice coordinator` binds (its --help names their variables) must be
        // a containerPort, a Service port and EXPOSEd: the check takes the list from the binary.
        let help = try await SpliceProcess.run(["coordinator", "--help"])
        let endpoints = Set(help.stdout.matches(of: #/SPLICE_[A-Z]+_ENDPOINT/#).map { String($0.output) })
            .subtracting(["SPLICE_METRICS_ENDPOINT"]).sorted()
        #expect(endpoints.count >= 3, "splice coordinator --help names too few endpoints: \(help.stdout)")
        var arguments = [Self.deploy.appendingPathComponent("check-deploy.py").path,
                         "--endpoints", endpoints.joined(separator: ",")]
        if let kubectl = Self.onPath("kubectl") {
            let built = try await ExternalTool.run(executable: URL(fileURLWithPath: kubectl),
                                                   ["kustomize", Self.deploy.appendingPathComponent("kubernetes").path])
            #expect(built.status == 0, "kubectl kustomize: \(built.stderr)")
            let file = Fixtures.temporaryDirectory("kustomize").appendingPathComponent("built.yaml")
            try built.stdout.write(to: file)
            arguments += ["--built", file.path]
        }
        let check = try await ExternalTool.run(executable: URL(fileURLWithPath: Self.python), arguments)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.text.contains("check-deploy: ok"))
    }

    @Test("promtool accepts the Prometheus configuration and the alert rules, and the rules' unit tests pass")
    func prometheus() async throws {
        let folder = Self.deploy.appendingPathComponent("prometheus")
        let rules = try await ExternalTool.run("promtool", ["check", "rules", folder.appendingPathComponent("splice-rules.yml").path])
        #expect(rules.status == 0, "\(rules.text)\(rules.stderr)")
        // The alerts fire (and stay quiet) as intended on synthetic series.
        let alerts = try await ExternalTool.run(
            "promtool", ["test", "rules", folder.appendingPathComponent("splice-rules.test.yml").path])
        #expect(alerts.status == 0 && alerts.text.contains("SUCCESS"), "\(alerts.text)\(alerts.stderr)")
        let hosts = try await ExternalTool.run("promtool", ["check", "config", folder.appendingPathComponent("prometheus.yml").path])
        #expect(hosts.status == 0, "\(hosts.text)\(hosts.stderr)")
        let kubernetes = try await ExternalTool.run(
            "promtool", ["check", "config", folder.appendingPathComponent("kubernetes.yml").path])
        // Debian builds Prometheus without Kubernetes discovery; that build cannot judge this file
        // beyond the missing field (PyYAML has read it above), upstream builds can.
        let debianWithoutDiscovery = kubernetes.stderr.contains("field kubernetes_sd_configs not found")
        #expect(kubernetes.status == 0 || debianWithoutDiscovery, "\(kubernetes.text)\(kubernetes.stderr)")
    }

    @Test("the KEDA role reads the queue with the scaler's own query, and nothing else")
    func kedaRole() async throws {
        let database = try await TestPostgres.makeDatabase()
        let owner = Self.conninfo(database)
        let role = Self.deploy.appendingPathComponent("kubernetes/keda-role.sql").path
        let created = try await ExternalTool.run("psql", [owner, "-v", "ON_ERROR_STOP=1", "-v", "password='keda-test'",
                                                          "-q", "-f", role])
        #expect(created.status == 0, "\(created.stderr)")
        let manifest = try String(contentsOf: Self.deploy.appendingPathComponent("kubernetes/keda.yaml"), encoding: .utf8)
        let query = try #require(manifest.split(separator: "\n").first { $0.contains("query: ") }
            .map { String($0.split(separator: "query: ", maxSplits: 1)[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) })
        let keda = owner.replacing(#/user=\S+/#, with: "user=splice_keda")
        let counted = try await ExternalTool.run("psql", [keda, "-v", "ON_ERROR_STOP=1", "-tAc", query])
        #expect(counted.status == 0, "\(counted.stderr)")
        #expect(counted.text.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // Other columns and tables are not readable; writes fail twice over: every transaction is
        // read-only, and one that asks to write has no privilege to.
        for forbidden in ["SELECT source_url FROM jobs", "SELECT lease_token FROM segments",
                          "BEGIN READ WRITE; UPDATE segments SET state = 'pending'; COMMIT",
                          "BEGIN READ WRITE; DELETE FROM job_events; COMMIT"] {
            let refused = try await ExternalTool.run("psql", [keda, "-v", "ON_ERROR_STOP=1", "-tAc", forbidden])
            #expect(refused.status != 0 && refused.stderr.contains("permission denied"), "\(forbidden): \(refused.stderr)")
        }
        let write = try await ExternalTool.run("psql", [keda, "-tAc", "UPDATE segments SET state = 'pending'"])
        #expect(write.status != 0 && write.stderr.contains("read-only transaction"), "\(write.stderr)")
    }

    // MARK: - Helpers

    /// Debian's Python, which python3-yaml installs PyYAML for; else whatever `python3` is.
    static var python: String {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : (onPath("python3") ?? "python3")
    }

    static func onPath(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `host=… port=… user=… dbname=…` for psql (the test server trusts its socket).
    static func conninfo(_ database: ConnectionConfiguration) -> String {
        database.description
    }
}

/// Every `splice_*` and `process_*` name the dashboard and the alert rules use is a family the
/// endpoints really serve (`exposition`: a coordinator's and a worker's /metrics).
func checkDeployFiles(against exposition: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let served = MetricsText(exposition).families.union(["up"])
    let files = ["grafana/splice-dashboard.json", "prometheus/splice-rules.yml"]
    for file in files {
        let text = try String(contentsOf: DeployFilesTests.deploy.appendingPathComponent(file), encoding: .utf8)
        let used = Set(text.matches(of: #/\b(?:splice|process)_[a-z_]+\b/#).map { String($0.output) })
        #expect(!used.isEmpty, "\(file) uses no metric", sourceLocation: sourceLocation)
        for name in used {
            let family = name.replacing(#/_(bucket|sum|count)$/#, with: "")
            #expect(served.contains(name) || served.contains(family), "\(file) uses \(name), which nothing serves",
                    sourceLocation: sourceLocation)
        }
    }
}

/// Every family a coordinator serves (`exposition`: its /metrics) has its row in docs/deploy.md's
/// metrics table, so an operator reading the docs sees all of them.
func checkDocumentedMetrics(coordinator exposition: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let docs = Fixtures.packageRoot.appendingPathComponent("docs/deploy.md")
    let text = try String(contentsOf: docs, encoding: .utf8)
    let table = text.split(separator: "\n").filter { $0.hasPrefix("| `splice_") || $0.hasPrefix("| `process_") }
        .joined(separator: "\n")
    for family in MetricsText(exposition).families.sorted() where family.hasPrefix("splice_") {
        #expect(table.contains("`\(family)`") || table.contains("`\(family){"), "docs/deploy.md's metrics table has no \(family)",
                sourceLocation: sourceLocation)
    }
}
