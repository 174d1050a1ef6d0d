import Foundation
import SpliceTestSupport
import Testing

/// The HTTP API on several coordinators (docs/coordinator.md, Standby coordinators): a standby
/// answers the reads from the database and refuses the writes with a 503 `not-active` problem that
/// names the active coordinator's HTTP API, so nothing is written under a stale epoch and a client
/// or load balancer knows where to go. curl is the client.
@Suite("HTTP API on a standby coordinator", .timeLimit(.minutes(5)))
struct StandbyHTTPTests {
    /// One exchange as curl saw it: the status, the headers (names lower-cased) and the body.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [String: Any]
    }

    static func request(_ method: String, _ url: String, token: String, body: String? = nil) async throws -> Answer {
        var arguments = ["-s", "-i", "-X", method, url, "-H", "Authorization: Bearer \(token)"]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data", body] }
        let output = try await ExternalTool.check("curl", arguments)
        let text = output.text.replacingOccurrences(of: "\r\n", with: "\n")
        guard let split = text.range(of: "\n\n") else { throw TestFailure("curl printed no headers: \(text)") }
        let head = text[..<split.lowerBound].split(separator: "\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ")[1]) else {
            throw TestFailure("no status line in \(text)")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let json = try JSONSerialization.jsonObject(with: Data(text[split.upperBound...].utf8)) as? [String: Any]
        return Answer(status: status, headers: headers, body: json ?? [:])
    }

    @Test("a standby serves the reads and answers POST /v1/jobs and cancel 503 not-active, naming the active one")
    func standbyRefusesWrites() async throws {
        let api = try await APICluster.start(workers: 0, standbys: 1)
        let token = try await api.token("ha", scopes: "read,submit,cancel")
        let active = try #require(APICluster.httpAddress(in: api.cluster.coordinators[0].output))
        let standby = try #require(APICluster.httpAddress(in: api.cluster.coordinators[1].output))
        let clip = try await APICluster.clip()
        let job = #"{"input": "\#(clip)", "output": "\#(api.cluster.outputPath("ha.mp4"))"}"#

        let refused = try await Self.request("POST", "http://\(standby)/v1/jobs", token: token, body: job)
        #expect(refused.status == 503)
        #expect(refused.headers["content-type"] == "application/problem+json")
        #expect(refused.body["type"] as? String == "urn:splice:problem:not-active")
        #expect(refused.headers["splice-active-coordinator"] == "http://\(active)/")
        #expect(refused.headers["retry-after"] == "1")
        let detail = refused.body["detail"] as? String ?? ""
        #expect(detail.contains("(c1) is a standby") && detail.contains("c0") && detail.contains("http://\(active)/v1"))
        // Nothing was written: the job store has no job.
        #expect(try await api.cluster.repository.jobs(in: [.queued, .planning, .running], limit: 10).isEmpty)

        let created = try await Self.request("POST", "http://\(active)/v1/jobs", token: token, body: job)
        #expect(created.status == 201)
        let id = try #require(created.body["id"] as? String)
        let read = try await Self.request("GET", "http://\(standby)/v1/jobs/\(id)", token: token)
        #expect(read.status == 200 && read.body["id"] as? String == id)
        let listed = try await Self.request("GET", "http://\(standby)/v1/jobs", token: token)
        #expect(listed.status == 200 && (listed.body["jobs"] as? [[String: Any]])?.first?["id"] as? String == id)

        let cancel = try await Self.request("POST", "http://\(standby)/v1/jobs/\(id)/cancel", token: token)
        #expect(cancel.status == 503 && cancel.body["type"] as? String == "urn:splice:problem:not-active")
        let still = try await Self.request("GET", "http://\(active)/v1/jobs/\(id)", token: token)
        #expect(still.body["state"] as? String != "cancelled")
        try await api.stop()
    }
}
