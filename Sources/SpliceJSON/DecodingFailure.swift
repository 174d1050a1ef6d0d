/// Where decoding a document into a type failed, as one line for people that names the field by
/// its path in backticks (`` `export.video.codec` ``, `` `body.annotations[2].time` ``) and never
/// quotes the document: what the client API answers a request it cannot decode, and what the
/// endpoints log.
public enum DecodingFailure {
    /// `error` — a `DecodingError` from decoding below `root` (a field path, or nil for the
    /// document itself) — described by the field it concerns; any other error as it describes itself.
    public static func describe(_ error: any Error, under root: String? = nil) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "`\(path(context.codingPath + [key], under: root))` is missing"
        case .valueNotFound(_, let context):
            return "`\(path(context.codingPath, under: root))` is null or missing"
        case .typeMismatch(_, let context):
            return "`\(path(context.codingPath, under: root))` has the wrong type (\(context.debugDescription))"
        case .dataCorrupted(let context):
            return "`\(path(context.codingPath, under: root))` is not valid: \(context.debugDescription)"
        @unknown default:
            return "the document does not decode"
        }
    }

    /// The path of the field `error` (a `DecodingError` from decoding below `root`) is about
    /// (`export.video.codec`), or `root` itself for any other error.
    public static func field(_ error: any Error, under root: String? = nil) -> String? {
        guard let error = error as? DecodingError else { return root }
        switch error {
        case .keyNotFound(let key, let context): return path(context.codingPath + [key], under: root)
        case .valueNotFound(_, let context), .typeMismatch(_, let context), .dataCorrupted(let context):
            return path(context.codingPath, under: root)
        @unknown default: return root
        }
    }

    /// `root.key.key[index].key`.
    public static func path(_ codingPath: [any CodingKey], under root: String? = nil) -> String {
        var text = root ?? ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "(the document)" : text
    }
}
