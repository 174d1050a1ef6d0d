/// The key=value ("logfmt") line format, `ts=… level=… msg=… key=value …`, and the JSON one,
/// `{"ts":"…","level":"…","msg":"…","key":"value",…}`.
enum LogFormat {
    /// One complete line, without the trailing newline. Every value, the message included, passes
    /// through ``Redaction`` and is quoted when it needs to be.
    static func line(millisecondsSinceEpoch: Int64, level: LogLevel, message: String, fields: [LogField]) -> String {
        var line = "ts=" + timestamp(millisecondsSinceEpoch: millisecondsSinceEpoch)
        line += " level=" + level.name
        line += " msg=" + quoted(Redaction.redactingSecrets(in: message))
        for field in fields {
            line += " " + field.key + "=" + quoted(Redaction.redactingSecrets(in: field.value))
        }
        return line
    }

    /// One JSON object on one line: the same fields in the same order, every value redacted,
    /// strings escaped (RFC 8259), integers and booleans bare.
    static func jsonLine(millisecondsSinceEpoch: Int64, level: LogLevel, message: String, fields: [LogField]) -> String {
        var line = "{\"ts\":\"" + timestamp(millisecondsSinceEpoch: millisecondsSinceEpoch) + "\""
        line += ",\"level\":\"" + level.name + "\""
        line += ",\"msg\":" + jsonString(Redaction.redactingSecrets(in: message))
        for field in fields {
            line += "," + jsonString(field.key) + ":"
            line += field.isBare ? field.value : jsonString(Redaction.redactingSecrets(in: field.value))
        }
        return line + "}"
    }

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`.
    static func jsonString(_ text: String) -> String {
        escaped(text) { value in
            let hex = String(value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    /// `text` in double quotes with `"`, `\`, newlines and tabs escaped, and any other control
    /// character as `control` spells it.
    private static func escaped(_ text: String, control: (UInt32) -> String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    result += control(scalar.value)
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

    /// `value` as is when it is a single plain word, otherwise in double quotes with `"`, `\` and
    /// control characters escaped, so that a line always splits back into the same fields.
    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\" || scalar.value < 0x20
                || scalar.value == 0x7F || scalar.properties.isWhitespace
        }
        guard needsQuotes else { return value }
        return escaped(value) { "\\u{" + String($0, radix: 16) + "}" }
    }

    /// RFC 3339 UTC with milliseconds: `2026-11-30T16:42:08.123Z`, computed with integers only.
    static func timestamp(millisecondsSinceEpoch: Int64) -> String {
        let milliseconds = floorModulo(millisecondsSinceEpoch, 1000)
        let seconds = floorDivide(millisecondsSinceEpoch, 1000)
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = floorModulo(seconds, 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
            + "T" + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2)
            + ":" + padded(secondOfDay % 60, 2) + "." + padded(milliseconds, 3) + "Z"
    }

    /// Proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's `civil_from_days`).
    private static func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : (a - b + 1) / b
    }

    private static func floorModulo(_ a: Int64, _ b: Int64) -> Int64 {
        a - floorDivide(a, b) * b
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
