#if canImport(Glibc)
import Glibc
#endif

/// The `Date` header's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), from the real-time clock.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func now() -> String {
        format(secondsSinceEpoch: Int(time(nil)))
    }

    static func format(secondsSinceEpoch seconds: Int) -> String {
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        return days[Int(parts.tm_wday)] + ", " + two(Int(parts.tm_mday)) + " " + months[Int(parts.tm_mon)] + " "
            + String(Int(parts.tm_year) + 1900) + " " + two(Int(parts.tm_hour)) + ":" + two(Int(parts.tm_min)) + ":"
            + two(Int(parts.tm_sec)) + " GMT"
    }

    private static func two(_ value: Int) -> String {
        value < 10 ? "0" + String(value) : String(value)
    }
}
