#if canImport(Glibc)
import Glibc
#endif

/// The standard `process_*` families every Prometheus client exposes, read from `/proc/self` at
/// scrape time (Linux): CPU seconds, resident and virtual memory, start time, open and maximum
/// file descriptors. Names and help texts are those of the Go client, so existing dashboards and
/// alerts work unchanged.
public enum ProcessMetrics {
    /// The figures as of now; a family whose source cannot be read is left out.
    public static func collect() -> [MetricFamily] {
        var families: [MetricFamily] = []
        if let stat = readStat() {
            let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
            let page = Double(max(1, sysconf(Int32(_SC_PAGESIZE))))
            families.append(.counter("process_cpu_seconds_total",
                                     help: "Total user and system CPU time spent in seconds.",
                                     [(labels: [], value: Double(stat.userTicks + stat.systemTicks) / ticks)]))
            families.append(.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.",
                                   value: Double(stat.residentPages) * page))
            families.append(.gauge("process_virtual_memory_bytes", help: "Virtual memory size in bytes.",
                                   value: Double(stat.virtualBytes)))
            if let boot = bootTime() {
                families.append(.gauge("process_start_time_seconds",
                                       help: "Start time of the process since unix epoch in seconds.",
                                       value: Double(boot) + Double(stat.startTicks) / ticks))
            }
        }
        if let open = openDescriptors() {
            families.append(.gauge("process_open_fds", help: "Number of open file descriptors.", value: Double(open)))
        }
        if let limit = maxDescriptors() {
            families.append(.gauge("process_max_fds", help: "Maximum number of open file descriptors.",
                                   value: Double(limit)))
        }
        return families
    }

    // MARK: - /proc

    struct Stat: Equatable {
        var userTicks: UInt64
        var systemTicks: UInt64
        var startTicks: UInt64
        var virtualBytes: UInt64
        var residentPages: UInt64
    }

    static func readStat() -> Stat? {
        readFile("/proc/self/stat").flatMap(parseStat)
    }

    /// `/proc/<pid>/stat`: the command name (field 2) is in parentheses and may hold spaces and
    /// parentheses itself, so fields are counted from the last `)`. After it, field 3 (state) is
    /// index 0: utime (14) → 11, stime (15) → 12, starttime (22) → 19, vsize (23) → 20, rss (24) → 21.
    static func parseStat(_ text: String) -> Stat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 21, let user = UInt64(fields[11]), let system = UInt64(fields[12]),
              let start = UInt64(fields[19]), let virtual = UInt64(fields[20]),
              let resident = UInt64(fields[21].trimmingSuffix("\n"))
        else { return nil }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual,
                    residentPages: resident)
    }

    /// Seconds since the epoch at which the machine booted (`btime` in `/proc/stat`).
    static func bootTime() -> UInt64? {
        guard let text = readFile("/proc/stat") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return UInt64(line.dropFirst("btime ".count))
        }
        return nil
    }

    /// Entries of `/proc/self/fd` (the descriptor reading the folder included, as the Go client counts).
    static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDot { count += 1 }
        }
        return count
    }

    /// The soft limit on open files (`Max open files` in `/proc/self/limits`).
    static func maxDescriptors() -> UInt64? {
        readFile("/proc/self/limits").flatMap(parseMaxOpenFiles)
    }

    static func parseMaxOpenFiles(_ text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix("Max open files") {
            let words = line.dropFirst("Max open files".count).split(separator: " ")
            guard let soft = words.first else { return nil }
            return soft == "unlimited" ? UInt64(Int64.max) : UInt64(soft)
        }
        return nil
    }

    /// A small file read whole (procfs files report size 0, so read until EOF).
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
            if bytes.count > 1 << 20 { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func trimmingSuffix(_ suffix: String) -> Substring {
        hasSuffix(suffix) ? dropLast(suffix.count) : self
    }
}
