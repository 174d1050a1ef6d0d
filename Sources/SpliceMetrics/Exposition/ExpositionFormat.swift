/// The Prometheus text exposition format, version 0.0.4: for each family a `# HELP` line, a
/// `# TYPE` line and its samples, `name{label="value",…} value`, one per line, with `\n` line
/// ends. Label values escape `\`, `"` and newline; HELP text escapes `\` and newline.
/// (https://prometheus.io/docs/instrumenting/exposition_formats/)
public enum ExpositionFormat {
    /// The `Content-Type` of a scrape answer.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text of `families`, in order. A family whose name came earlier is left out (two
    /// families of one name are invalid); so is a family without samples.
    public static func render(_ families: [MetricFamily]) -> String {
        var seen: Set<String> = []
        var text = ""
        for family in families where !family.samples.isEmpty && seen.insert(family.name).inserted {
            text += "# HELP " + family.name + " " + escapeHelp(family.help) + "\n"
            text += "# TYPE " + family.name + " " + family.type.rawValue + "\n"
            for sample in family.samples {
                text += family.name + sample.suffix
                if !sample.labels.isEmpty {
                    text += "{" + sample.labels.map { $0.name + "=\"" + escapeLabelValue($0.value) + "\"" }
                        .joined(separator: ",") + "}"
                }
                text += " " + format(sample.value) + "\n"
            }
        }
        return text
    }

    /// A label value inside its double quotes: `\` → `\\`, `"` → `\"`, newline → `\n`.
    public static func escapeLabelValue(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// HELP text: `\` → `\\`, newline → `\n`.
    public static func escapeHelp(_ help: String) -> String {
        var escaped = ""
        for scalar in help.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A sample value as Go's `strconv.ParseFloat` reads it: `+Inf`, `-Inf`, `NaN`, integers
    /// without a fraction (`42`, up to 2^53), anything else in Swift's shortest round-trip form
    /// (`0.25`, `1e-05`).
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            return value == 0 ? "0" : String(Int64(value))
        }
        return String(value)
    }
}
