import Foundation
import SpliceCore

/// SigV4 query-string signing ("presigned URLs"): a GET URL that carries its own signature
/// (`X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`,
/// `X-Amz-SignedHeaders`, `X-Amz-Signature`), so any HTTP reader — FFmpeg's own — can fetch
/// the object without credentials of its own, until it expires.
///
/// libcurl signs headers, not URLs, so this is the one place Splice computes SigV4 itself; it
/// is checked against AWS's published example and against botocore's presigner.
struct Presigner: Sendable {
    let endpoint: S3Endpoint
    let region: String
    let credentials: ObjectStoreCredentials

    /// The presigned GET URL of `key` in `bucket`, valid for `expires` seconds from `date`.
    func url(method: String = "GET", bucket: String, key: String, expires: Int, date: Date) -> String {
        let timestamp = Self.timestamp(date)
        let day = String(timestamp.prefix(8))
        let scope = "\(day)/\(region)/s3/aws4_request"
        var query: [(String, String)] = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope)"),
            ("X-Amz-Date", timestamp),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", "host"),
        ]
        if let token = credentials.sessionToken { query.append(("X-Amz-Security-Token", token)) }
        let canonicalQuery = S3Endpoint.canonicalQuery(query)
        let path = endpoint.path(bucket: bucket, key: key)
        let canonicalRequest = [
            method, path, canonicalQuery, "host:\(endpoint.hostHeader(bucket: bucket))", "", "host", "UNSIGNED-PAYLOAD",
        ].joined(separator: "\n")
        let stringToSign = [
            "AWS4-HMAC-SHA256", timestamp, scope, SHA256.hexDigest(of: Array(canonicalRequest.utf8)),
        ].joined(separator: "\n")
        let signature = SHA256.hex(signingKey(day: day).authenticationCode(for: Array(stringToSign.utf8)))
        return endpoint.url(bucket: bucket, key: key, query: query) + "&X-Amz-Signature=" + signature
    }

    /// SigV4's derived key: HMAC chain over the day, region, service and `aws4_request`.
    private func signingKey(day: String) -> HMACSHA256 {
        var key = Array("AWS4\(credentials.secretAccessKey)".utf8)
        for part in [day, region, "s3", "aws4_request"] {
            key = HMACSHA256(key: key).authenticationCode(for: Array(part.utf8))
        }
        return HMACSHA256(key: key)
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC.
    static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(parts.year ?? 1970)\(two(parts.month))\(two(parts.day))T\(two(parts.hour))\(two(parts.minute))"
            + "\(two(parts.second))Z"
    }
}
