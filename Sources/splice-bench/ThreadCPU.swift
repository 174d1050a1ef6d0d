import Foundation

/// CPU time of threads of this process, for telling the load's cost from the coordinator's.
enum ThreadCPU {
    /// The calling thread's user + system CPU time, in microseconds.
    static var current: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1_000
    }

    /// User + system CPU time of this process's threads whose name starts with `prefix`
    /// (from /proc/self/task/*/stat), in microseconds.
    static func microseconds(namedWithPrefix prefix: String) -> Int64 {
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        var total: Int64 = 0
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                  stat[stat.index(after: open)..<close].hasPrefix(prefix)
            else { continue }
            // Fields after the name: state(3) … utime(14) stime(15), counted from 1.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { continue }
            total += (user + system) * 1_000_000 / max(1, ticks)
        }
        return total
    }

    /// User + system CPU time of the process `pid` (its threads together, from /proc/PID/stat),
    /// in microseconds; 0 when it cannot be read.
    static func microseconds(ofProcess pid: Int32) -> Int64 {
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return 0 }
        return (user + system) * 1_000_000 / max(1, ticks)
    }
}
