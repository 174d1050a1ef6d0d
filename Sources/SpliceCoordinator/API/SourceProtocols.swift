internal import Foundation

/// The protocols a SUBMIT's input may use (`--source-protocols`, `file,http,https,s3` by
/// default): a local path is `file`; anything else must be `SCHEME://…` with the scheme on the
/// list. `s3` is object storage, read by the coordinator itself (SpliceMedia's `StorageRegistry`),
/// never by FFmpeg's own protocols. FFmpeg opens far more than files and web addresses — `concat:`, `subfile:`, `pipe:`,
/// devices, `tcp:` listeners — and a client must not be able to point the coordinator (or its
/// workers) at those: they are refused at submit, with the allowed list in the reason.
struct SourceProtocols: Sendable, Hashable {
    /// The protocols admitted, lowercased.
    let allowed: [String]

    /// Protocols FFmpeg reads a network source with; the rest are local or exotic.
    static let known: Set<String> = ["file", "http", "https", "ftp", "sftp", "rtmp", "rtmps", "rtsp", "srt", "hls", "s3"]

    init(_ names: [String]) throws(CoordinatorError) {
        let cleaned = names.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        for name in cleaned where !Self.known.contains(name) {
            throw CoordinatorError(.invalidConfiguration, "--source-protocols: '\(name)' is not a source protocol "
                                   + "Splice admits (choose from \(Self.known.sorted().joined(separator: ", ")))")
        }
        allowed = cleaned
    }

    /// The protocol of `input`: `file` for an absolute path, the scheme of `SCHEME://…`, or the
    /// text before the first `:` otherwise (FFmpeg's `concat:…`, `subfile,,…:`); nil for neither.
    static func scheme(of input: String) -> String? {
        if input.hasPrefix("/") { return "file" }
        guard let colon = input.firstIndex(of: ":") else { return nil }
        return input[..<colon].lowercased()
    }

    /// Whether `input` is a URL the coordinator does not check as a path (`http://…`).
    static func isURL(_ input: String) -> Bool {
        !input.hasPrefix("/") && input.contains("://")
    }

    /// Nil when `input` may be submitted, else the reason it may not.
    func refusal(of input: String) -> String? {
        let list = allowed.isEmpty ? "none" : allowed.joined(separator: ", ")
        guard let scheme = Self.scheme(of: input) else {
            return "input must be an absolute path or a URL, not '\(input.prefix(200))'"
        }
        guard allowed.contains(scheme) else {
            return "input '\(input.prefix(200))' uses protocol '\(scheme.prefix(40))', which this coordinator does not "
                + "accept (allowed: \(list); --source-protocols)"
        }
        if scheme != "file" && !input.lowercased().hasPrefix(scheme + "://") {
            return "input '\(input.prefix(200))' is not a \(scheme):// URL"
        }
        return nil
    }
}
