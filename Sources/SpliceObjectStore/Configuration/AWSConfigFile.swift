/// One AWS shared file, `~/.aws/config` or `~/.aws/credentials`, read the way botocore reads it
/// (Python's configparser, then nested sub-sections):
///
///     [default]                        # config: [default], [profile NAME], [services NAME]
///     region = eu-west-1               # credentials: [NAME]
///     s3 =
///       addressing_style = path        # an indented block under an empty value is a sub-section
///       endpoint_url = http://127.0.0.1:9000
///
/// Full-line comments start with `#` or `;` (a `#` after a value is part of the value, as in
/// botocore); keys are case-insensitive; `=` or `:` separates key and value; a line indented
/// deeper than its key continues the value. A line that is none of these is refused with the
/// file and line number, as the AWS CLI refuses it.
struct AWSConfigFile: Sendable, Equatable {
    /// One `[section]`: its plain values and its nested sub-sections (`s3 = …` blocks).
    struct Section: Sendable, Equatable {
        var values: [String: String] = [:]
        var nested: [String: [String: String]] = [:]
    }

    /// Which of the two files this is: they name profiles differently.
    enum Kind: Sendable {
        /// `~/.aws/config`: `[default]` and `[profile NAME]`.
        case config
        /// `~/.aws/credentials`: `[NAME]`.
        case credentials
    }

    /// The sections by their name as written between the brackets (trimmed).
    private(set) var sections: [String: Section] = [:]
    let kind: Kind
    let path: String

    /// Parses `text`, read from `path` (named in errors).
    init(parsing text: String, kind: Kind, path: String) throws(ObjectStoreError) {
        self.kind = kind
        self.path = path
        var current: String?
        // The option being read and its raw value lines (continuations appended), and its indent.
        var option: (name: String, lines: [String], indent: Int, line: Int)?
        func flush() throws(ObjectStoreError) {
            guard let pending = option, let section = current else { return }
            option = nil
            try store(pending.name, lines: pending.lines, in: section, line: pending.line)
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, rawLine) in lines.enumerated() {
            let lineNumber = index + 1
            let line = rawLine.hasSuffix("\r") ? String(rawLine.dropLast()) : String(rawLine)
            let stripped = line.trimmingSpaces()
            let indent = line.prefix { $0 == " " || $0 == "\t" }.count
            if stripped.hasPrefix("#") || stripped.hasPrefix(";") { continue }
            if stripped.isEmpty {
                option?.lines.append("")
                continue
            }
            // configparser: a line indented deeper than the current option continues its value.
            if let pending = option, indent > pending.indent {
                option?.lines.append(stripped)
                continue
            }
            try flush()
            if stripped.hasPrefix("[") {
                guard stripped.hasSuffix("]"), stripped.count > 2 else {
                    throw parseError(lineNumber, "a section header is written [NAME]")
                }
                let name = String(stripped.dropFirst().dropLast()).trimmingSpaces()
                guard sections[name] == nil else {
                    throw parseError(lineNumber, "section [\(name)] appears twice")
                }
                sections[name] = Section()
                current = name
                continue
            }
            guard current != nil else {
                throw parseError(lineNumber, "a setting before any [section] header")
            }
            guard let separator = stripped.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
                throw parseError(lineNumber, "expected NAME = VALUE")
            }
            let name = String(stripped[..<separator]).trimmingSpaces().lowercased()
            guard !name.isEmpty else { throw parseError(lineNumber, "a setting without a name") }
            let value = String(stripped[stripped.index(after: separator)...]).trimmingSpaces()
            option = (name, [value], indent, lineNumber)
        }
        try flush()
    }

    /// The profile `name`: `[default]` or `[profile NAME]` in the config file, `[NAME]` in the
    /// credentials file (botocore also accepts `[profile NAME]` there; so does this).
    func profile(_ name: String) -> Section? {
        switch kind {
        case .config:
            if name == "default", let section = sections["default"] { return section }
            return section(prefixed: "profile", named: name)
        case .credentials:
            return sections[name] ?? section(prefixed: "profile", named: name)
        }
    }

    /// The `[services NAME]` section of the config file.
    func services(_ name: String) -> Section? {
        section(prefixed: "services", named: name)
    }

    /// The section written `[PREFIX NAME]`, with any spacing and with NAME optionally quoted.
    private func section(prefixed prefix: String, named name: String) -> Section? {
        for (header, section) in sections where header.hasPrefix(prefix) {
            let rest = header.dropFirst(prefix.count)
            guard let first = rest.first, first == " " || first == "\t" else { continue }
            var candidate = String(rest).trimmingSpaces()
            if candidate.count >= 2, let quote = candidate.first, quote == "\"" || quote == "'", candidate.last == quote {
                candidate = String(candidate.dropFirst().dropLast())
            }
            if candidate == name { return section }
        }
        return nil
    }

    /// Stores one option: a plain value, or (an empty first line followed by indented lines)
    /// a sub-section of `key = value` lines, as botocore's `_parse_nested` reads it.
    private mutating func store(_ name: String, lines: [String], in section: String, line: Int) throws(ObjectStoreError) {
        var lines = lines
        while lines.last?.isEmpty == true { lines.removeLast() }
        if lines.count > 1, lines[0].isEmpty {
            var nested: [String: String] = [:]
            for entry in lines.dropFirst() where !entry.isEmpty {
                guard let equals = entry.firstIndex(of: "=") else {
                    throw parseError(line, "the sub-settings of \(name) are written NAME = VALUE, one per indented line")
                }
                nested[String(entry[..<equals]).trimmingSpaces().lowercased()] =
                    String(entry[entry.index(after: equals)...]).trimmingSpaces()
            }
            sections[section]?.nested[name] = nested
        } else {
            sections[section]?.values[name] = lines.joined(separator: "\n")
        }
    }

    private func parseError(_ line: Int, _ problem: String) -> ObjectStoreError {
        ObjectStoreError(.invalidConfiguration, "\(path) line \(line): \(problem); fix the file (the AWS CLI reads it the same way)")
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[start...end])
    }
}
