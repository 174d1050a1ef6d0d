import Foundation
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP API as a platform uses it: a real coordinator and worker, a Python client with
/// `requests`, a webhook receiver with Python's `http.server` and `hmac` judging the signatures,
/// ffprobe judging the output (docs/api.md).
@Suite("HTTP API", .timeLimit(.minutes(5)))
struct HTTPAPITests {
    @Test("submit, follow the events to the end (resumed once), the signed webhook arrives, the output is frame-exact")
    func endToEnd() async throws {
        let api = try await APICluster.start()
        let token = try await api.token("platform", scopes: "read,submit,cancel")
        let reader = try await api.token("reader", scopes: "read")
        try await api.client("e2e", ["tokens": ["full": token, "read": reader], "clip": try await APICluster.clip()])
        try await api.stop()
    }

    @Test("Idempotency-Key: the same job again, 422 for another body, 409 while in flight; cancel; pages newest first")
    func idempotency() async throws {
        let api = try await APICluster.start()
        let full = try await api.token("full", scopes: "read,submit,cancel")
        let other = try await api.token("other-tenant", scopes: "read,submit")
        let reader = try await api.token("reader", scopes: "read")
        try await api.client("idempotency", ["tokens": ["full": full, "other": other, "read": reader],
                                             "clip": try await APICluster.clip()])
        try await api.stop()
    }

    @Test("401 without or with a bad token, 403 per scope and outside the token's roots, 429 over its rate, problems")
    func authorization() async throws {
        let api = try await APICluster.start()
        let clip = try await APICluster.clip()
        // A tenant's folders, and its clip inside them.
        let tenant = Fixtures.temporaryDirectory("tenant")
        let inputs = tenant.appendingPathComponent("in"), outputs = tenant.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        let tenantClip = inputs.appendingPathComponent("clip.mp4").path
        try FileManager.default.copyItem(atPath: clip, toPath: tenantClip)
        // A link inside the tenant's folder to a file outside it.
        let link = inputs.appendingPathComponent("elsewhere.mp4").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: clip)
        let tokens = [
            "full": try await api.token("full", scopes: "read,submit,cancel"),
            "read": try await api.token("reader", scopes: "read"),
            "submit": try await api.token("submitter", scopes: "submit"),
            "cancel": try await api.token("canceller", scopes: "cancel"),
            "rooted": try await api.token("tenant", scopes: "read,submit",
                                          ["--input-root", inputs.path, "--output-root", outputs.path]),
            "slow": try await api.token("slow", scopes: "read", ["--rate-limit", "1"]),
            "expired": try await api.token("expiring", scopes: "read", ["--expires", "1s"]),
            "revoked": try await api.token("revoked", scopes: "read"),
        ]
        let revoke = try await SpliceProcess.run(["tokens", "revoke", "revoked", "--coordinator", api.cluster.coordinator.api])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let list = try await SpliceProcess.run(["tokens", "list", "--json", "--coordinator", api.cluster.coordinator.api])
        #expect(list.status == 0 && list.stdout.contains("\"tenant\"") && !list.stdout.contains("\"revoked\""))
        #expect(!list.stdout.contains("spl_"), "a token list must never show a token")
        try await Task.sleep(for: .seconds(1.5))  // the expiring token's second
        try await api.client("auth", ["tokens": tokens, "clip": clip,
                                      "rooted": ["inputs": inputs.path, "outputs": outputs.path, "clip": tenantClip,
                                                 "link": link]])
        // Tokens are never logged.
        for token in tokens.values { #expect(!api.cluster.coordinatorLogs.contains(token)) }
        try await api.stop()
    }

    @Test("Schemathesis against the live OpenAPI document: no 5xx, every answer as documented; the document validates")
    func schemathesis() async throws {
        // Roots: nothing the generated requests name can be read or written outside a scratch folder.
        let sandbox = Fixtures.temporaryDirectory("fuzz")
        let api = try await APICluster.start(flags: ["--input-root", sandbox.path, "--output-root", sandbox.path])
        let token = try await api.token("fuzz", scopes: "read,submit,cancel", ["--rate-limit", "100000"])
        let tools = URL(fileURLWithPath: try TestS3.python()).deletingLastPathComponent()
        let document = api.api + "/v1/openapi.json"
        // openapi-spec-validator reads files: the document as the endpoint serves it.
        guard let served = await HTTPFetch.get(String(api.api.dropFirst("http://".count)), "/v1/openapi.json"),
              served.status == 200 else {
            throw TestFailure("GET /v1/openapi.json failed")
        }
        let file = Fixtures.temporaryDirectory("openapi").appendingPathComponent("openapi.json")
        try Data(served.body.utf8).write(to: file)
        let validated = try await ExternalTool.run(
            executable: tools.appendingPathComponent("openapi-spec-validator"), [file.path])
        #expect(validated.status == 0, "openapi-spec-validator: \(validated.text) \(validated.stderr)")
        let examples = ProcessInfo.processInfo.environment["SPLICE_SCHEMATHESIS_EXAMPLES"] ?? "12"
        let report = Fixtures.temporaryDirectory("schemathesis")
        let run = try await ExternalTool.run(
            executable: tools.appendingPathComponent("schemathesis"),
            ["run", document, "--header", "Authorization: Bearer \(token)", "--max-examples", examples,
             "--checks", "all", "--exclude-checks", "positive_data_acceptance", "--seed", "23",
             "--phases", "examples,fuzzing", "--workers", "2", "--request-timeout", "20",
             "--generation-database", "none", "--no-color", "--report", "junit", "--report-dir", report.path])
        #expect(run.status == 0, "schemathesis:\n\(run.text.suffix(20_000))\n\(run.stderr.suffix(4000))")
        #expect(!api.cluster.coordinatorLogs.contains("HTTP API request failed"), "an unexpected error was logged")
        print(run.text.split(separator: "\n").suffix(15).joined(separator: "\n"))
        try await api.stop()
    }

    @Test("HTTPS through Deploy/nginx/splice-api.conf: submit, stream and read over TLS")
    func https() async throws {
        let api = try await APICluster.start()
        let token = try await api.token("tls", scopes: "read,submit,cancel")
        let nginx = try await Nginx.start(upstream: String(api.api.dropFirst("http://".count)))
        defer { nginx.stop() }
        try await api.client("https", ["tokens": ["full": token, "read": token], "clip": try await APICluster.clip(),
                                       "https": nginx.url, "ca": nginx.certificate])
        try await api.stop()
    }
}

/// Debian's nginx running `Deploy/nginx/splice-api.conf` as it ships, with the test's ports and a
/// self-signed certificate (for 127.0.0.1) substituted, as a child process in a folder of its own.
struct Nginx {
    let process: ChildProcess
    let url: String
    let certificate: String

    static func start(upstream: String) async throws -> Nginx {
        let folder = Fixtures.temporaryDirectory("nginx")
        let certificate = folder.appendingPathComponent("cert.pem").path
        let key = folder.appendingPathComponent("key.pem").path
        try await ExternalTool.check("openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate])
        let port = try freePort()
        var site = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("Deploy/nginx/splice-api.conf"),
                              encoding: .utf8)
        for (from, to) in [("server 127.0.0.1:8080;", "server \(upstream);"), ("listen 443 ssl;", "listen 127.0.0.1:\(port) ssl;"),
                           ("listen [::]:443 ssl;", ""), ("/etc/splice/tls/fullchain.pem", certificate),
                           ("/etc/splice/tls/privkey.pem", key)] {
            guard site.contains(from) else { throw TestFailure("splice-api.conf no longer has '\(from)'") }
            site = site.replacingOccurrences(of: from, with: to)
        }
        let conf = folder.appendingPathComponent("nginx.conf")
        let prefix = folder.path
        try Data("""
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log info;
            events { worker_connections 256; }
            http {
                access_log \(prefix)/access.log;
                client_body_temp_path \(prefix)/body;
                proxy_temp_path \(prefix)/proxy;
                fastcgi_temp_path \(prefix)/fastcgi;
                uwsgi_temp_path \(prefix)/uwsgi;
                scgi_temp_path \(prefix)/scgi;
            \(site)
            }
            """.utf8).write(to: conf)
        let process = try ChildProcess.start(executable: "/usr/sbin/nginx", ["-p", prefix, "-c", conf.path],
                                             logName: "nginx")
        let url = "https://127.0.0.1:\(port)"
        guard await eventually(within: .seconds(20), { connects(port) }) else {
            throw TestFailure("nginx did not listen:\n\(process.output)\n"
                + ((try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""))
        }
        return Nginx(process: process, url: url, certificate: certificate)
    }

    func stop() { process.signal(SIGTERM) }

    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else { throw TestFailure("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A free port below the kernel's ephemeral range, for a listener that starts later: a port
    /// from ``freePort()`` is in that range, and in the seconds before its listener starts an
    /// outgoing connection anywhere on the machine may be given it as its local port (seen once:
    /// a webhook receiver started after a job ran failed with EADDRINUSE). Ports below the range
    /// are never handed out that way.
    static func portForLater() throws -> UInt16 {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first }.flatMap { UInt16($0) } ?? 32768
        let low: UInt16 = 10000
        guard range > low + 100 else { return try freePort() }
        for _ in 0..<200 {
            let port = UInt16.random(in: low..<range)
            if bindable(port) { return port }
        }
        throw TestFailure("no free port below \(range)")
    }

    /// Whether a TCP socket can bind 127.0.0.1:`port` now.
    static func bindable(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    static func connects(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
