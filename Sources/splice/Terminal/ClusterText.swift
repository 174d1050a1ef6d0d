import Foundation

/// How cluster values read in `splice status`, `jobs` and `workers`.
enum ClusterText {
    /// `2026-11-30 17:20:01` (UTC) for milliseconds since the Unix epoch; `-` for none.
    static func time(millisecondsSinceEpoch milliseconds: Int64?) -> String {
        guard let milliseconds else { return "-" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
