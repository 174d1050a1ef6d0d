public import Foundation

/// A `timestamptz` as whole microseconds since the Unix epoch, read from and written in the ISO
/// text form the store's sessions use (`SET DateStyle = ISO`, `TimeZone = UTC`).
///
/// Parsing keeps integers end to end; only the conversion to `Date` at the API edge goes through
/// Foundation's floating-point seconds.
public struct PostgresTimestamp: Hashable, Sendable, Comparable {
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    public var microsecondsSinceEpoch: Int64

    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = microsecondsSinceEpoch
    }

    public init(_ date: Date) {
        microsecondsSinceEpoch = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    public var date: Date {
        Date(timeIntervalSince1970: TimeInterval(microsecondsSinceEpoch) / 1_000_000)
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch }

    private static let infinity = Int64.max
    private static let minusInfinity = Int64.min

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff](+|-)HH[:MM[:SS]]`, `infinity` and `-infinity`.
    public init?(text: String) {
        if text == "infinity" { self.init(microsecondsSinceEpoch: Self.infinity); return }
        if text == "-infinity" { self.init(microsecondsSinceEpoch: Self.minusInfinity); return }
        var scanner = DigitScanner(Array(text.utf8))
        guard let year = scanner.number(), scanner.skip("-"), let month = scanner.number(), scanner.skip("-"),
              let day = scanner.number(), scanner.skip(" ") || scanner.skip("T"),
              let hour = scanner.number(), scanner.skip(":"), let minute = scanner.number(), scanner.skip(":"),
              let second = scanner.number()
        else { return nil }
        var micros: Int64 = 0
        if scanner.skip(".") {
            var digits = 0
            while let digit = scanner.digit() {
                if digits < 6 { micros = micros * 10 + Int64(digit) }
                digits += 1
            }
            guard digits > 0 else { return nil }
            if digits < 6 { for _ in digits..<6 { micros *= 10 } }
        }
        var offsetSeconds: Int64 = 0
        if let sign = scanner.sign() {
            guard let hours = scanner.number() else { return nil }
            var offset = hours * 3600
            if scanner.skip(":"), let minutes = scanner.number() {
                offset += minutes * 60
                if scanner.skip(":"), let seconds = scanner.number() { offset += seconds }
            }
            offsetSeconds = sign * offset
        }
        guard scanner.atEnd, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        self.init(microsecondsSinceEpoch: seconds * 1_000_000 + micros)
    }

    /// The ISO text form in UTC, `YYYY-MM-DD HH:MM:SS.ffffff+00`.
    public var text: String {
        if microsecondsSinceEpoch == Self.infinity { return "infinity" }
        if microsecondsSinceEpoch == Self.minusInfinity { return "-infinity" }
        let (seconds, micros) = floorDivide(microsecondsSinceEpoch, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) "
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
            + ".\(pad(micros, 6))+00"
    }

    private func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
        return (quotient, value - quotient * divisor)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension PostgresTimestamp: PostgresEncodable, PostgresDecodable {
    public static var postgresType: PostgresType { .timestamptz }
    public var postgresText: String? { text }
    public static func decode(postgresText text: String?) throws -> PostgresTimestamp {
        let text = try nonNull(text)
        guard let value = PostgresTimestamp(text: text) else {
            throw PostgresDecodingIssue("not a timestamptz in ISO form: \(text)")
        }
        return value
    }
}

/// A tiny cursor over ASCII bytes for the timestamp parser.
private struct DigitScanner {
    let bytes: [UInt8]
    var position = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { position == bytes.count }

    mutating func skip(_ character: Character) -> Bool {
        guard position < bytes.count, bytes[position] == character.asciiValue else { return false }
        position += 1
        return true
    }

    mutating func digit() -> Int? {
        guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else {
            return nil
        }
        defer { position += 1 }
        return Int(bytes[position] - UInt8(ascii: "0"))
    }

    mutating func number() -> Int64? {
        var value: Int64?
        while let digit = digit() { value = (value ?? 0) * 10 + Int64(digit) }
        return value
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}
