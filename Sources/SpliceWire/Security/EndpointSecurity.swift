/// The rule for running without CURVE: only where nobody else can connect.
///
/// A coordinator bound to a non-loopback address without keys would accept any worker that
/// can reach it, so it refuses to start unless the operator explicitly passes `--insecure`;
/// on loopback (and the local-only `ipc://` and `inproc://` transports) keys are optional.
public enum EndpointSecurity {
    /// Whether `endpoint` is reachable only from this machine: `tcp://` on 127.0.0.0/8,
    /// `localhost`, `::1` or the `lo` interface, or an `ipc://` / `inproc://` endpoint.
    /// Wildcards (`*`, `0.0.0.0`, `::`), other addresses, host names and interfaces are not.
    public static func isLoopback(_ endpoint: String) -> Bool {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        var host = Substring(endpoint.dropFirst("tcp://".count))
        // A connect endpoint may name a source address first: "tcp://src;dest:port".
        if let semicolon = host.lastIndex(of: ";") { host = host[host.index(after: semicolon)...] }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        switch host.lowercased() {
        case "localhost", "lo", "::1", "0:0:0:0:0:0:0:1":
            return true
        default:
            let octets = host.split(separator: ".", omittingEmptySubsequences: false)
            return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
        }
    }

    /// Throws `.insecureBinding` when `endpoint` is not loopback, CURVE is off and `insecure`
    /// was not given. The coordinator calls this for each endpoint it binds before binding it.
    public static func checkBinding(_ endpoint: String, curveEnabled: Bool, insecure: Bool) throws(WireError) {
        guard !curveEnabled, !insecure, !isLoopback(endpoint) else { return }
        throw WireError(
            .insecureBinding, "refusing to listen on \(endpoint) without CURVE keys: anyone who can reach it could "
                + "act as a worker or client. Create keys with `splice keys generate`, bind to 127.0.0.1, "
                + "or pass --insecure on a network you trust")
    }
}
