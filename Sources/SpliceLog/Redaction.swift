/// Removes passwords from text before it reaches a log line or an error message.
///
/// Two shapes are recognised: the password in a URL's user info (`postgres://user:pw@host/db`
/// becomes `postgres://user:***@host/db`) and libpq `password=` keywords in connection strings
/// or query parameters (`host=db password=pw` becomes `host=db password=***`).
public enum Redaction {
    /// The replacement written where a secret was.
    public static let mask = "***"

    /// `text` with every recognised password replaced by ``mask``.
    public static func redactingSecrets(in text: String) -> String {
        guard text.contains("://") || text.contains("password=") else { return text }
        var characters = Array(text)
        redactURLPasswords(in: &characters)
        redactPasswordKeywords(in: &characters)
        return String(characters)
    }

    /// For each `scheme://user:password@host`, replaces `password`.
    private static func redactURLPasswords(in characters: inout [Character]) {
        var index = 0
        while let separator = find(Array("://"), in: characters, from: index) {
            let authorityStart = separator + 3
            var authorityEnd = authorityStart
            while authorityEnd < characters.count, !"/?# \t\n\"'".contains(characters[authorityEnd]) {
                authorityEnd += 1
            }
            let authority = characters[authorityStart..<authorityEnd]
            if let at = authority.lastIndex(of: "@"),
               let colon = characters[authorityStart..<at].firstIndex(of: ":"), colon + 1 < at {
                characters.replaceSubrange((colon + 1)..<at, with: Array(mask))
                authorityEnd -= (at - colon - 1) - mask.count
            }
            index = authorityEnd
        }
    }

    /// For each `password=value` (value bare, or quoted with `'`), replaces `value`.
    private static func redactPasswordKeywords(in characters: inout [Character]) {
        let keyword = Array("password=")
        var index = 0
        while let start = find(keyword, in: characters, from: index) {
            let valueStart = start + keyword.count
            var valueEnd = valueStart
            if valueStart < characters.count, characters[valueStart] == "'" {
                valueEnd += 1
                while valueEnd < characters.count, characters[valueEnd] != "'" {
                    valueEnd += characters[valueEnd] == "\\" ? 2 : 1
                }
                valueEnd = min(valueEnd + 1, characters.count)
            } else {
                while valueEnd < characters.count, !" \t\n&;\"".contains(characters[valueEnd]) {
                    valueEnd += 1
                }
            }
            if valueEnd > valueStart {
                characters.replaceSubrange(valueStart..<valueEnd, with: Array(mask))
            }
            index = valueStart + (valueEnd > valueStart ? mask.count : 0)
        }
    }

    private static func find(_ needle: [Character], in haystack: [Character], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
