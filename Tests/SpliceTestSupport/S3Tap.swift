public import Foundation

/// A recording proxy between Splice and the S3 emulator (`s3-emulator.py tap`): every request
/// is logged as received (method, path, headers, body) and forwarded unchanged, so a test can
/// see exactly what Splice sent — and have botocore sign the same request — and can make the
/// next requests of a method fail with a chosen status (fault injection).
public final class S3Tap: Sendable {
    /// `http://127.0.0.1:PORT`: point the store's endpoint here.
    public let endpoint: String
    /// The JSON-lines log of requests.
    public let log: URL
    private let helper: HelperProcess

    /// One request as the tap received it.
    public struct Record: Sendable {
        public var method: String
        /// The request target as sent (path and query, still percent-encoded).
        public var path: String
        /// Header names as sent, with their values, in order.
        public var headers: [(name: String, value: String)]
        public var bodyLength: Int

        /// The first header called `name` (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// A tap in front of `upstream` (the emulator's endpoint).
    public init(upstream: String) async throws {
        let log = Fixtures.temporaryDirectory("tap").appendingPathComponent("requests.jsonl")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        helper = try await ExternalTool.offPool { try HelperProcess(["tap", upstream, log.path]) }
        guard let endpoint = helper.firstLine["endpoint"] as? String else {
            throw TestFailure("s3-emulator.py tap said \(helper.firstLine)")
        }
        self.endpoint = endpoint
        self.log = log
    }

    /// Answers the next `count` requests with `method` with HTTP `status` (an S3 error document)
    /// instead of forwarding them.
    public func fail(_ method: String, status: Int, count: Int) async throws {
        let helper = self.helper
        try await ExternalTool.offPool { try helper.command("fail \(method) \(status) \(count)") }
    }

    /// Every request received so far, in order.
    public func records() throws -> [Record] {
        let text = try String(contentsOf: log, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let method = object["method"] as? String, let path = object["path"] as? String,
                  let headers = object["headers"] as? [[String]] else { throw TestFailure("tap log line: \(line)") }
            return Record(method: method, path: path, headers: headers.map { ($0[0], $0[1]) },
                          bodyLength: object["bodyLength"] as? Int ?? 0)
        }
    }

    /// What botocore's S3SigV4Auth computes for each logged signed request, beside what was sent.
    public func botocoreSignatures(accessKeyID: String, secretAccessKey: String, region: String,
                                   sessionToken: String? = nil) async throws -> [SignatureCheck] {
        let text = try await TestS3.run(["sign", log.path, accessKeyID, secretAccessKey, region] + (sessionToken.map { [$0] } ?? []))
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let method = object["method"] as? String, let path = object["path"] as? String,
                  let sent = object["sent"] as? String, let expected = object["botocore"] as? String
            else { throw TestFailure("sign said \(line)") }
            return SignatureCheck(method: method, path: path, sent: sent, botocore: expected,
                                  payloadHash: object["payloadHash"] as? String)
        }
    }

    /// One request's Authorization header as Splice sent it and as botocore computes it.
    public struct SignatureCheck: Sendable {
        public var method: String
        public var path: String
        public var sent: String
        public var botocore: String
        /// The payload hash botocore signed (its own SHA-256 of the body, or UNSIGNED-PAYLOAD).
        public var payloadHash: String?
    }
}
