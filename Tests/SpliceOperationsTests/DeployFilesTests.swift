import Foundation
import SpliceStore
import SpliceTestSupport
import Testing

/// The deployment files, checked without a cluster: `Deploy/check-deploy.py` (PyYAML) over the
/// Kubernetes manifests as the kustomization assembles them, and over `kubectl kustomize`'s own
/// output when kubectl is installed; `Deploy/validate-manifests.py` (kubernetes-validate, strict)
/// against Kubernetes' own schemas and KEDA's CRD schemas (`KEDA/keda-crds.yaml` beside this file);
/// `promtool` over the Prometheus configuration and alert rules; the KEDA role's privileges on a
/// real database.
@Suite("Deployment files", .timeLimit(.minutes(2)))
struct DeployFilesTests {
    static let deploy = Fixtures.packageRoot.appendingPathComponent("Deploy")

    @Test("the manifests, the Dockerfile, the KEDA objects, the dashboard and the compose file hold together")
    func manifests() async throws {
        // Every ZeroMQ endpoint `splice coordinator` binds (its --help names their variables) must be
        // a containerPort, a Service port and EXPOSEd: the check takes the list from the binary. The
        // operators' endpoint and the HTTP API (off by default, published behind nginx) are HTTP.
        let help = try await SpliceProcess.run(["coordinator", "--help"])
        let endpoints = Set(help.stdout.matches(of: #/SPLICE_[A-Z]+_ENDPOINT/#).map { String($0.output) })
            .subtracting(["SPLICE_METRICS_ENDPOINT", "SPLICE_HTTP_ENDPOINT"]).sorted()
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

    @Test("Kubernetes' own schemas accept every manifest, strictly, and KEDA's CRD schemas accept its objects")
    func schemas() async throws {
        let python = try Self.toolsPython()
        let script = Self.deploy.appendingPathComponent("validate-manifests.py").path
        let check = try await ExternalTool.run(executable: python, [script])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.text.contains("validate-manifests: ok"), "\(check.text)")
        #expect(check.text.contains("2 of them KEDA's"), "the ScaledObject and its TriggerAuthentication: \(check.text)")
        // kubectl's assembly too (namespace and image applied), when kubectl is installed.
        if let kubectl = Self.onPath("kubectl") {
            let built = try await ExternalTool.run(executable: URL(fileURLWithPath: kubectl),
                                                   ["kustomize", Self.deploy.appendingPathComponent("kubernetes").path])
            let file = Fixtures.temporaryDirectory("kustomize").appendingPathComponent("built.yaml")
            try built.stdout.write(to: file)
            let checkBuilt = try await ExternalTool.run(executable: python, [script, file.path])
            #expect(checkBuilt.status == 0, "\(checkBuilt.stderr)")
        }
    }

    @Test("the schema check refuses fields Kubernetes or KEDA does not know, and kinds it has no schema for")
    func schemasRefuse() async throws {
        let python = try Self.toolsPython()
        let folder = Self.deploy.appendingPathComponent("kubernetes")
        var manifests = ""
        for file in ["coordinator.yaml", "worker.yaml", "keda.yaml"] {
            manifests += try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8) + "\n---\n"
        }
        // Mistakes a YAML parser lets through: a field misspelt in a pod spec, one in a ScaledObject,
        // a container port given as a string, a kind from nowhere (one per object: each object's
        // first mistake is reported).
        let broken = manifests
            .replacing("terminationGracePeriodSeconds: 90", with: "terminationGracePeriod: 90")
            .replacing("minReplicaCount: 1", with: "minReplicas: 1")
            .replacing("containerPort: 9451", with: "containerPort: \"9451\"")
            + "\n---\napiVersion: splice.example/v1\nkind: Encoder\nmetadata: {name: x}\n"
        let file = Fixtures.temporaryDirectory("schemas").appendingPathComponent("broken.yaml")
        try broken.write(to: file, atomically: true, encoding: .utf8)
        let check = try await ExternalTool.run(executable: python,
                                               [Self.deploy.appendingPathComponent("validate-manifests.py").path, file.path])
        #expect(check.status == 1)
        for expected in ["Deployment splice-coordinator: spec.template.spec: Additional properties are not allowed "
                            + "('terminationGracePeriod' was unexpected)",
                         "ScaledObject splice-worker: spec: Additional properties are not allowed ('minReplicas' was unexpected)",
                         "spec.template.spec.containers.0.ports.0.containerPort: '9451' is not of type 'integer'",
                         "Couldn't find schema for kind Encoder"] {
            #expect(check.stderr.contains(expected), "\(expected): \(check.stderr)")
        }
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

    /// The Python that Deploy/setup.sh installed kubernetes-validate into (SPLICE_TOOLS, default /opt/splice-tools).
    static func toolsPython() throws -> URL {
        let tools = ProcessInfo.processInfo.environment["SPLICE_TOOLS"] ?? "/opt/splice-tools"
        let python = URL(fileURLWithPath: tools).appendingPathComponent("bin/python3")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw ToolMissing(message: "no \(python.path): run Deploy/setup.sh, which installs kubernetes-validate there")
        }
        return python
    }

    struct ToolMissing: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
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
