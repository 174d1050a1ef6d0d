import Foundation

/// The little XML S3 speaks: flat documents (`<Error><Code>…</Code>…</Error>`,
/// `<InitiateMultipartUploadResult>…<UploadId>…`) and lists of flat records
/// (`<Upload><Key>…</Key><UploadId>…</UploadId></Upload>…`). Enough to read those, not a
/// general parser: no namespaces prefixes, no CDATA, no DTDs (S3 sends none of them).
struct S3XML: Sendable {
    /// The document (or record) text.
    let text: Substring

    init(_ bytes: [UInt8]) {
        text = Substring(String(decoding: bytes, as: UTF8.self))
    }

    private init(slice: Substring) {
        text = slice
    }

    /// The name of the first element (skipping the `<?xml …?>` declaration), e.g. `Error`.
    var rootName: String? {
        var rest = text[...]
        while let open = rest.firstIndex(of: "<") {
            let after = rest.index(after: open)
            guard after < rest.endIndex else { return nil }
            if rest[after] == "?" || rest[after] == "!" {
                guard let close = rest[after...].firstIndex(of: ">") else { return nil }
                rest = rest[rest.index(after: close)...]
                continue
            }
            let name = rest[after...].prefix { $0 != ">" && $0 != " " && $0 != "/" && $0 != "\n" && $0 != "\r" && $0 != "\t" }
            return name.isEmpty ? nil : String(name)
        }
        return nil
    }

    /// The decoded text of the first `<name>` element, nil when there is none.
    func value(_ name: String) -> String? {
        elements(name).first.map { Self.decodeEntities($0) }
    }

    /// Each `<name>…</name>` element's content as a document of its own, in order.
    func records(_ name: String) -> [S3XML] {
        elements(name).map { S3XML(slice: $0) }
    }

    /// The raw contents of every `<name>` element (`<name/>` counts, empty).
    private func elements(_ name: String) -> [Substring] {
        var found: [Substring] = []
        var rest = text[...]
        let open = "<" + name, close = "</" + name + ">"
        while let start = rest.range(of: open) {
            let afterName = start.upperBound
            guard afterName < rest.endIndex else { break }
            let next = rest[afterName]
            guard next == ">" || next == " " || next == "/" || next == "\n" || next == "\t" || next == "\r" else {
                rest = rest[afterName...]  // a longer name (`<UploadIdMarker>` when looking for `<UploadId`)
                continue
            }
            guard let tagEnd = rest[afterName...].firstIndex(of: ">") else { break }
            if rest[rest.index(before: tagEnd)] == "/" {
                found.append(rest[tagEnd..<tagEnd])
                rest = rest[rest.index(after: tagEnd)...]
                continue
            }
            let contentStart = rest.index(after: tagEnd)
            guard let end = rest[contentStart...].range(of: close) else { break }
            found.append(rest[contentStart..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// `text` with XML's five entities and numeric references replaced.
    static func decodeEntities(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var result = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                let number: UInt32? = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16)
                    : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) {
                    result.unicodeScalars.append(scalar)
                } else {
                    result += rest[amp...semicolon]
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }

    /// `text` escaped for an element's content.
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }
}
