import Foundation

/// The URLs a store's requests go to: AWS S3's regional endpoint or a custom one, the bucket
/// in the host name (virtual-hosted) or in the path, the key and the query encoded exactly as
/// SigV4 canonicalises them — so what libcurl signs is byte for byte what S3 recomputes.
struct S3Endpoint: Sendable, Equatable {
    /// `http` or `https`.
    let scheme: String
    /// The host name, without the port (an IPv6 literal keeps its brackets).
    let host: String
    /// The port when it is not the scheme's default.
    let port: Int?
    /// A path prefix of a custom endpoint (`/s3` for `http://proxy/s3`), without a trailing slash.
    let basePath: String
    let style: ObjectStoreConfiguration.AddressingStyle
    let isCustom: Bool

    init(configuration: ObjectStoreConfiguration) throws(ObjectStoreError) {
        style = configuration.addressingStyle
        guard let text = configuration.endpoint else {
            let suffix = configuration.region.hasPrefix("cn-") ? "amazonaws.com.cn" : "amazonaws.com"
            scheme = "https"
            host = "s3.\(configuration.region).\(suffix)"
            port = nil
            basePath = ""
            isCustom = false
            return
        }
        let invalid = ObjectStoreError(.invalidConfiguration, "endpoint \"\(text)\" is not an http(s) URL "
            + "(AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or endpoint_url): write it like http://127.0.0.1:9000")
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
              components.user == nil, components.password == nil, components.query == nil, components.fragment == nil
        else { throw invalid }
        self.scheme = scheme
        self.host = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host.lowercased()
        let defaultPort = scheme == "https" ? 443 : 80
        port = components.port.flatMap { $0 == defaultPort ? nil : $0 }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
        isCustom = true
    }

    /// Whether `bucket` goes into the host name.
    func usesVirtualHost(for bucket: String) -> Bool {
        switch style {
        case .path: return false
        case .virtualHosted: return !bucket.isEmpty
        case .automatic:
            // A dot would break the TLS certificate's wildcard; a custom endpoint may have no
            // wildcard DNS at all, and every S3-compatible service serves path-style.
            return !isCustom && !bucket.isEmpty && !bucket.contains(".")
        }
    }

    /// The Host header value for requests about `bucket`: host, and port when not the default.
    func hostHeader(bucket: String) -> String {
        let name = usesVirtualHost(for: bucket) ? "\(bucket).\(host)" : host
        return port.map { "\(name):\($0)" } ?? name
    }

    /// The canonical (SigV4) path of `key` in `bucket`: every byte percent-encoded but the
    /// unreserved ones and `/`, nothing normalised (`a/../b` and `a//b` are keys of their own).
    func path(bucket: String, key: String) -> String {
        let encodedKey = Self.uriEncode(key, keepSlash: true)
        if usesVirtualHost(for: bucket) { return basePath + "/" + encodedKey }
        if bucket.isEmpty { return basePath + "/" }
        return basePath + "/" + bucket + (key.isEmpty ? "" : "/" + encodedKey)
    }

    /// The full URL of a request about `key` in `bucket` with `query` (canonical order and encoding).
    func url(bucket: String, key: String, query: [(String, String)] = []) -> String {
        let canonicalQuery = Self.canonicalQuery(query)
        return "\(scheme)://\(hostHeader(bucket: bucket))\(path(bucket: bucket, key: key))"
            + (canonicalQuery.isEmpty ? "" : "?" + canonicalQuery)
    }

    /// SigV4's canonical query string: names and values encoded, pairs sorted by name then
    /// value, `name=` written even for an empty value (`uploads=`).
    static func canonicalQuery(_ query: [(String, String)]) -> String {
        query.map { (uriEncode($0.0, keepSlash: false), uriEncode($0.1, keepSlash: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// SigV4's URI encoding: every UTF-8 byte but `A-Z a-z 0-9 - _ . ~` (and `/` when kept) as
    /// `%XX` with uppercase hex.
    static func uriEncode(_ text: String, keepSlash: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
