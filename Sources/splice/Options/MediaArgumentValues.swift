import SpliceCore
import SpliceMedia

// How media types are typed on the command line.

extension JobState: ArgumentValue {}
extension VideoSettings.Codec: ArgumentValue {}
extension AudioSettings.Codec: ArgumentValue {}
extension OutputFileType: ArgumentValue {}
extension TrackPolicy: ArgumentValue {}

extension AudioTrackSelection: ArgumentValue {
    init(argument: String) throws {
        guard let selection = AudioTrackSelection(parsing: argument) else {
            throw InvalidArgumentValue(expected: "all, none, track numbers like 1,3, or languages like eng,fra")
        }
        self = selection
    }
}

extension MediaTime: ArgumentValue {
    init(argument: String) throws {
        guard let time = MediaTime(parsing: argument) else {
            throw InvalidArgumentValue(expected: "a time like 90, 1.5, 01:30 or 00:01:30.5")
        }
        self = time
    }
}

extension Rational: ArgumentValue {
    init(argument: String) throws {
        guard let rate = Rational(parsing: argument) else {
            throw InvalidArgumentValue(expected: "a positive rate like 25, 29.97 or 30000/1001")
        }
        self = rate
    }
}

/// A bit rate as people write it: `128k`, `2.5M`, `4000000`. Exact integer arithmetic.
struct BitRate: ArgumentValue, CustomStringConvertible {
    var bitsPerSecond: Int

    init(argument: String) throws {
        let text = argument.trimmingCharacters(in: " ")
        var digits = Substring(text)
        var scale = 1
        switch digits.last {
        case "k", "K": scale = 1000; digits = digits.dropLast()
        case "m", "M": scale = 1_000_000; digits = digits.dropLast()
        default: break
        }
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int(parts[0]), whole >= 0,
              parts.count == 1 || (!parts[1].isEmpty && parts[1].allSatisfy(\.isNumber) && parts[1].count <= 6)
        else { throw InvalidArgumentValue(expected: "a bit rate like 128k, 2.5M or 4000000") }
        var value = whole * scale
        if parts.count == 2 {
            var divisor = 1
            for _ in parts[1] { divisor *= 10 }
            value += Int(parts[1])! * scale / divisor
        }
        guard value > 0 else { throw InvalidArgumentValue(expected: "a bit rate above zero") }
        bitsPerSecond = value
    }

    var description: String { String(bitsPerSecond) }
}

/// `key=value`, for `--metadata title=Holiday`.
struct Tag: ArgumentValue {
    var key: String
    var value: String

    init(argument: String) throws {
        guard let eq = argument.firstIndex(of: "="), eq != argument.startIndex else {
            throw InvalidArgumentValue(expected: "key=value, like title=Holiday")
        }
        key = String(argument[..<eq])
        value = String(argument[argument.index(after: eq)...])
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
