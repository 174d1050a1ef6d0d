import SpliceCore

/// The `Splice-Signature` header of a webhook delivery, in Stripe's scheme:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A receiver recomputes the MAC
/// over the raw body with its secret, compares in constant time, and refuses timestamps more than
/// five minutes old (a replayed delivery). docs/api.md has a receiver's code.
enum WebhookSignature {
    static func header(secret: String, timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=" + SHA256.hex(mac(secret: secret, timestamp: timestamp, body: body))
    }

    /// HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    static func mac(secret: String, timestamp: Int64, body: [UInt8]) -> [UInt8] {
        HMACSHA256(key: Array(secret.utf8)).authenticationCode(for: Array("\(timestamp).".utf8) + body)
    }

    /// Whether `header` signs `body` under `secret` within `tolerance` seconds of `now` (what a
    /// receiver does; the tests' own check).
    static func verify(header: String, secret: String, body: [UInt8], now: Int64, tolerance: Int64 = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(String(pair[1])) }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(SHA256.hex(mac(secret: secret, timestamp: timestamp, body: body)).utf8)
        return signatures.contains { ConstantTime.equals(Array($0.utf8), expected) }
    }
}
