/// Removes secrets from text that may quote connection details: libpq's own messages can echo
/// parts of a connection string ("missing \"=\" after …"), and a URL carries its password inline.
struct Redactor: Sendable {
    /// Exact strings that must never appear (the password, the whole connection string).
    var secrets: [String]

    init(secrets: [String] = []) {
        // Longest first, so a connection string is replaced whole before the password inside it.
        self.secrets = secrets.filter { !$0.isEmpty }.sorted { $0.count > $1.count }
    }

    func redact(_ text: String) -> String {
        var result = text
        for secret in secrets {
            result = result.replacing(secret, with: "***")
        }
        return Redactor.redactPatterns(result)
    }

    /// Generic clean-up for secrets we were not told about: `password=…` key/value pairs and the
    /// password part of `scheme://user:password@host` URLs.
    static func redactPatterns(_ text: String) -> String {
        var result = text
        result = result.replacing(#/(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)/#) { match in
            "\(match.output.1)***"
        }
        result = result.replacing(#/(://[^:/@\s]*:)[^@\s]*@/#) { match in
            "\(match.output.1)***@"
        }
        return result
    }
}
