import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain HTTP/1.1 GET over a socket of its own thread (the operators' endpoints), with a hard
/// timeout: what the tests use instead of a client library.
public enum HTTPFetch {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
    }

    /// `GET path` from `address` (`127.0.0.1:PORT`); nil when nothing answered within `timeout`.
    public static func get(_ address: String, _ path: String, method: String = "GET",
                           timeout: Duration = .seconds(10)) async -> Response? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: blocking(address, path, method: method, timeout: timeout)) }.start()
        }
    }

    private static func blocking(_ address: String, _ path: String, method: String, timeout: Duration) -> Response? {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            return nil
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var time = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, String(address[..<colon]), &sin.sin_addr)
        let connected = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("\(method) \(path) HTTP/1.1\r\nHost: \(address)\r\nAccept: */*\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return nil
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = head.first, statusLine.hasPrefix("HTTP/1.1 "),
              let status = Int(statusLine.dropFirst(9).prefix(3)) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return Response(status: status, headers: headers, body: String(text[split.upperBound...]))
    }
}

/// Samples of a Prometheus text exposition, for checking figures in tests.
public struct MetricsText: Sendable {
    public struct Sample: Sendable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    public let text: String
    public let samples: [Sample]

    /// Parses the sample lines (comments skipped; label values unescaped).
    public init(_ text: String) {
        self.text = text
        var samples: [Sample] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...])
                ?? (line.hasSuffix("+Inf") ? .infinity : nil) else { continue }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else {
                samples.append(Sample(name: String(series), labels: [:], value: value))
                continue
            }
            var labels: [String: String] = [:]
            var rest = series[series.index(after: brace)...].dropLast()  // drop "}"
            while let equals = rest.firstIndex(of: "=") {
                let name = String(rest[..<equals])
                var index = rest.index(equals, offsetBy: 2)  // past ="
                var value = ""
                while index < rest.endIndex, rest[index] != "\"" {
                    if rest[index] == "\\", rest.index(after: index) < rest.endIndex {
                        index = rest.index(after: index)
                        value.append(rest[index] == "n" ? "\n" : rest[index])
                    } else {
                        value.append(rest[index])
                    }
                    index = rest.index(after: index)
                }
                labels[name] = value
                rest = rest[min(rest.endIndex, rest.index(after: index))...]
                if rest.first == "," { rest = rest.dropFirst() }
            }
            samples.append(Sample(name: String(series[..<brace]), labels: labels, value: value))
        }
        self.samples = samples
    }

    /// The sum of the samples named `name` whose labels include `labels`; nil when there are none.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in
            sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value }
        }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }

    /// Every family name a `# TYPE` line declares.
    public var families: Set<String> {
        Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.compactMap { $0.split(separator: " ").dropFirst(2).first.map(String.init) })
    }
}
