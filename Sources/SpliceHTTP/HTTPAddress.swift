#if canImport(Glibc)
import Glibc
#endif

/// Where an HTTP server listens: an IP address literal and a port, written `127.0.0.1:9450`,
/// `[::1]:9450`, `0.0.0.0:9450` (every IPv4 address) or `[::]:9450`. `localhost` means
/// `127.0.0.1`; other host names are refused (a listener binds an address, not a name). Port 0
/// lets the kernel pick one (tests).
public struct HTTPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The numeric host: `127.0.0.1`, `::1`, `0.0.0.0`, `::`.
    public var host: String
    public var port: UInt16

    /// The address in `text`, or nil when it is not `IP:PORT` / `[IPv6]:PORT`.
    public init?(parsing text: String) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
            guard Self.isIPv6(String(host)) else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else { return nil }
            host = text[..<colon] == "localhost" ? "127.0.0.1" : text[..<colon]
            port = text[text.index(after: colon)...]
            guard Self.isIPv4(String(host)) else { return nil }
        }
        guard !port.isEmpty, port.utf8.allSatisfy({ (48...57).contains($0) }), let number = UInt16(port) else { return nil }
        self.host = String(host)
        self.port = number
    }

    /// An address from its parts; `host` must be a numeric IPv4 or IPv6 address.
    public init?(host: String, port: UInt16) {
        guard Self.isIPv4(host) || Self.isIPv6(host) else { return nil }
        self.host = host
        self.port = port
    }

    /// Whether only this machine can connect (127.0.0.0/8 or ::1).
    public var isLoopback: Bool {
        if isIPv6 { return host == "::1" }
        return host.hasPrefix("127.")
    }

    /// Whether the host is an IPv6 address.
    public var isIPv6: Bool { host.contains(":") }

    /// `127.0.0.1:9450`, `[::1]:9450`.
    public var description: String {
        (isIPv6 ? "[" + host + "]" : host) + ":" + String(port)
    }

    /// `http://127.0.0.1:9450` (an unspecified host is shown as loopback, where a local client
    /// reaches it).
    public var url: String {
        let shown = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        return "http://" + (isIPv6 ? "[" + shown + "]" : shown) + ":" + String(port)
    }

    private static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    private static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }
}
