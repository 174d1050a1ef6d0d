import Foundation
import SpliceStore
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A `splice coordinator` serving the HTTP API on a loopback port, and a worker, as child processes
/// on a private database (``LocalCluster``); tokens made the way operators make them (`splice tokens
/// create`), and the Python client (`Python/client.py`, `requests`) run against it.
struct APICluster {
    var cluster: LocalCluster
    /// `http://127.0.0.1:PORT`.
    let api: String
    let secretFile: URL

    /// The coordinator's webhook secret (`--webhook-secret`).
    static let secret = "the-coordinators-own-webhook-secret"

    /// With `standbys`, that many more coordinators on the database, each serving the HTTP API on
    /// a port of its own (``httpAddress(in:)`` of its log); `api` is the first one's, the active one.
    static func start(workers: Int = 1, flags: [String] = [], standbys: Int = 0) async throws -> APICluster {
        let secretFile = Fixtures.temporaryDirectory("secret").appendingPathComponent("webhook.secret")
        try Data((secret + "\n").utf8).write(to: secretFile)
        let cluster = try await LocalCluster.start(
            workers: workers, leaseSeconds: 30,
            coordinatorFlags: ["--http-endpoint", "127.0.0.1:0", "--webhook-secret", secretFile.path] + flags,
            standbys: standbys)
        guard let address = Self.httpAddress(in: cluster.coordinator.output) else {
            throw TestFailure("the coordinator logged no `http api ready`\n\(cluster.logs)")
        }
        return APICluster(cluster: cluster, api: "http://" + address, secretFile: secretFile)
    }

    /// The address of the latest `http api ready address=…` line of `log`.
    static func httpAddress(in log: String) -> String? {
        log.split(separator: "\n").last { $0.contains("http api ready") }?.split(separator: " ")
            .first { $0.hasPrefix("address=") }.map { String($0.dropFirst("address=".count)) }
    }

    /// `splice tokens create NAME --scopes SCOPES extra…` against the coordinator; the token it printed.
    func token(_ name: String, scopes: String, _ extra: [String] = []) async throws -> String {
        let result = try await SpliceProcess.run(
            ["tokens", "create", name, "--scopes", scopes, "--coordinator", cluster.coordinator.api] + extra)
        guard result.status == 0 else { throw TestFailure("splice tokens create \(name) failed: \(result.stderr)") }
        let token = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.hasPrefix("spl_"), !token.contains("\n") else {
            throw TestFailure("splice tokens create printed '\(result.stdout)'")
        }
        return token
    }

    /// Runs `client.py SCENARIO` with `config` (the API, the database and the outputs folder added);
    /// records its output as an issue unless it passed.
    @discardableResult
    func client(_ scenario: String, _ config: [String: Any]) async throws -> String {
        var config = config
        config["api"] = config["api"] ?? api
        config["database"] = cluster.database.description
        config["outputs"] = cluster.outputs.path
        let file = Fixtures.temporaryDirectory("client").appendingPathComponent("config.json")
        try JSONSerialization.data(withJSONObject: config).write(to: file)
        let script = Fixtures.packageRoot.appendingPathComponent("Tests/SpliceAPITests/Python/client.py").path
        let output = try await ExternalTool.run(executable: URL(fileURLWithPath: try TestS3.python()),
                                                [script, scenario, file.path])
        #expect(output.status == 0, "client.py \(scenario):\n\(output.text)\n\(output.stderr)\n\(cluster.logs.suffix(6000))")
        return output.text
    }

    /// A clip of 2 s, 25 frames a second, with audio, in a folder of its own.
    static func clip() async throws -> String {
        try await Fixtures.clip(Fixtures.ClipSpec(seconds: "2", width: 160, height: 120, frameRate: "25"))
    }

    func stop() async throws {
        try await cluster.stop()
    }
}
