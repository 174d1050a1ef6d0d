/// What a credential of the coordinator's APIs may do — an HTTP API token's scopes and, on the
/// ZeroMQ API, an admin key's (docs/api.md, Tokens and scopes). One spelling on both doors, in
/// the store and on the command line.
public enum APIScope: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Read jobs, their events and the workers.
    case read
    /// Submit jobs.
    case submit
    /// Cancel jobs.
    case cancel
    /// Enroll and revoke worker keys, make and revoke tokens.
    case admin

    public static func < (lhs: APIScope, rhs: APIScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// The scopes of `read,submit` (spaces around commas allowed), or the word that names none.
    public static func parseList(_ text: String) -> Result<Set<APIScope>, ParseFailure> {
        var scopes: Set<APIScope> = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmed()
            guard let scope = APIScope(rawValue: name) else { return .failure(ParseFailure(word: name)) }
            scopes.insert(scope)
        }
        return .success(scopes)
    }

    /// A word in a scope list that names no scope.
    public struct ParseFailure: Error, Sendable, CustomStringConvertible {
        public var word: String
        public var description: String {
            "'\(word.prefix(40))' is not a scope; the scopes are " + APIScope.allCases.map(\.rawValue).joined(separator: ", ")
        }
    }

    /// `read,submit`, in the order of ``allCases``.
    public static func list(_ scopes: Set<APIScope>) -> String {
        scopes.sorted().map(\.rawValue).joined(separator: ",")
    }
}

private extension Substring {
    /// Without spaces and tabs around it.
    func trimmed() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
