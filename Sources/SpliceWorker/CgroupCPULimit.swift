internal import Foundation

/// The CPU bandwidth limit of this process's cgroup: what Docker's `--cpus` and a Kubernetes CPU
/// limit set, so that a container limited to 4 CPUs on a 64-core machine does not start 64 encoder
/// threads (the trouble Go's and the JVM's runtimes had to fix). Read the way they read it:
///
/// 1. `/proc/self/cgroup` names the process's cgroup: the `0::PATH` line of cgroup v2, or for
///    cgroup v1 the line whose controllers include `cpu` (`4:cpu,cpuacct:PATH`).
/// 2. `/proc/self/mountinfo` says where that hierarchy is mounted (`cgroup2`, or `cgroup` with the
///    `cpu` option) and which cgroup the mount shows at its top (a container without a cgroup
///    namespace sees its own cgroup there, not `/`).
/// 3. From that directory up to the mount point, each level's `cpu.max` (v2: `QUOTA PERIOD` or
///    `max PERIOD`) or `cpu.cfs_quota_us` / `cpu.cfs_period_us` (v1: −1 for none): a parent's
///    limit binds its children too, so the tightest counts.
///
/// The limit in cores is quota ÷ period rounded **up** (1.5 CPUs → 2), as the JVM and Go do: the
/// kernel meters the quota over all threads together, so a spare thread costs little while a
/// missing one leaves the half CPU unused. Anything missing or unreadable counts as no limit.
public struct CgroupCPULimit: Sendable, Hashable, CustomStringConvertible {
    /// Microseconds of CPU time the cgroup may use per period, over all its threads.
    public var quotaMicroseconds: Int64
    public var periodMicroseconds: Int64
    /// The directory of the cgroup whose limit this is (the process's own or an ancestor's).
    public var cgroup: String

    /// quota ÷ period, rounded up; at least 1.
    public var cores: Int {
        Self.cores(quota: quotaMicroseconds, period: periodMicroseconds)
    }

    /// `150000/100000 µs (2 cores) in /sys/fs/cgroup/…`.
    public var description: String {
        "\(quotaMicroseconds)/\(periodMicroseconds) µs (\(cores) core\(cores == 1 ? "" : "s")) in \(cgroup)"
    }

    /// The tightest limit on this process, or nil for none.
    public static func ofThisProcess() -> CgroupCPULimit? {
        guard let cgroup = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
              let mountinfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
        return tightest(cgroup: cgroup, mountinfo: mountinfo) { try? String(contentsOfFile: $0, encoding: .utf8) }
    }

    /// The tightest limit along the process's cgroups (v2 and v1 alike) as `cgroup` and
    /// `mountinfo` (the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`) place them,
    /// reading each level's files with `read` (nil: no such file).
    static func tightest(cgroup: String, mountinfo: String, read: (String) -> String?) -> CgroupCPULimit? {
        let membership = Membership(procSelfCgroup: cgroup)
        var limits: [CgroupCPULimit] = []
        for mount in Mount.parse(mountinfo: mountinfo) {
            guard let path = mount.version == .unified ? membership.unified : membership.cpuV1,
                  let directory = mount.directory(of: path) else { continue }
            for level in Self.levels(from: directory, upTo: mount.mountPoint) {
                let bandwidth: Bandwidth?
                switch mount.version {
                case .unified:
                    bandwidth = read(level + "/cpu.max").flatMap(Bandwidth.init(cpuMax:))
                case .v1:
                    guard let quota = read(level + "/cpu.cfs_quota_us"), let period = read(level + "/cpu.cfs_period_us")
                    else { continue }
                    bandwidth = Bandwidth(cfsQuota: quota, cfsPeriod: period)
                }
                if case .limited(let quota, let period) = bandwidth {
                    limits.append(CgroupCPULimit(quotaMicroseconds: quota, periodMicroseconds: period, cgroup: level))
                }
            }
        }
        // The deepest of equally tight limits (the first found) names the cgroup.
        return limits.min { $0.cores < $1.cores }
    }

    /// `directory`, its parent, … up to and including `top`.
    static func levels(from directory: String, upTo top: String) -> [String] {
        var levels = [directory]
        var current = directory
        while current != top, current.count > top.count, let slash = current.lastIndex(of: "/") {
            current = String(current[..<slash])
            if current.isEmpty { current = "/" }
            levels.append(current)
        }
        return levels
    }

    /// ⌈quota ÷ period⌉, at least 1, without overflowing.
    static func cores(quota: Int64, period: Int64) -> Int {
        let whole = quota / period + (quota % period == 0 ? 0 : 1)
        return Int(clamping: max(1, whole))
    }

    // MARK: - The kernel's texts

    /// One level's bandwidth setting.
    enum Bandwidth: Hashable, Sendable {
        case unlimited
        case limited(quota: Int64, period: Int64)

        /// cgroup v2's `cpu.max`: `max 100000` (no limit) or `150000 100000` (1.5 CPUs); nil for
        /// anything else.
        init?(cpuMax text: String) {
            let fields = text.split(whereSeparator: \.isWhitespace)
            guard fields.count == 2, let period = Int64(fields[1]), period > 0 else { return nil }
            if fields[0] == "max" {
                self = .unlimited
            } else if let quota = Int64(fields[0]), quota > 0 {
                self = .limited(quota: quota, period: period)
            } else {
                return nil
            }
        }

        /// cgroup v1's `cpu.cfs_quota_us` (`-1`: no limit) and `cpu.cfs_period_us`; nil for anything else.
        init?(cfsQuota: String, cfsPeriod: String) {
            guard let quota = Int64(cfsQuota.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let period = Int64(cfsPeriod.trimmingCharacters(in: .whitespacesAndNewlines)), period > 0 else {
                return nil
            }
            if quota == -1 {
                self = .unlimited
            } else if quota > 0 {
                self = .limited(quota: quota, period: period)
            } else {
                return nil
            }
        }
    }

    /// The process's cgroups, from `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` per line).
    struct Membership: Hashable, Sendable {
        /// cgroup v2's path (the `0::PATH` line).
        var unified: String?
        /// The path in the cgroup v1 hierarchy that holds the `cpu` controller.
        var cpuV1: String?

        init(procSelfCgroup text: String) {
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                guard fields.count == 3, fields[2].hasPrefix("/") else { continue }
                if fields[0] == "0" && fields[1].isEmpty {
                    unified = String(fields[2])
                } else if fields[1].split(separator: ",").contains("cpu") {
                    cpuV1 = String(fields[2])
                }
            }
        }
    }

    /// A mounted cgroup hierarchy that can carry a CPU limit, from `/proc/self/mountinfo`.
    struct Mount: Hashable, Sendable {
        enum Version: Hashable, Sendable {
            /// cgroup v2 (`cgroup2`).
            case unified
            /// A cgroup v1 hierarchy with the `cpu` controller.
            case v1
        }

        var version: Version
        /// The cgroup the mount shows at its top (`/` unless the process sees only part of the tree).
        var root: String
        var mountPoint: String

        /// The cgroup v2 mounts and the v1 mounts of the `cpu` controller. A line is
        /// `ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS`,
        /// with spaces in paths written `\040`.
        static func parse(mountinfo text: String) -> [Mount] {
            text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard let dash = fields.firstIndex(of: "-"), dash >= 6, fields.count >= dash + 4 else { return nil }
                let root = unescape(fields[3]), mountPoint = unescape(fields[4])
                switch fields[dash + 1] {
                case "cgroup2":
                    return Mount(version: .unified, root: root, mountPoint: mountPoint)
                case "cgroup" where fields[dash + 3].split(separator: ",").contains("cpu"):
                    return Mount(version: .v1, root: root, mountPoint: mountPoint)
                default:
                    return nil
                }
            }
        }

        /// Where cgroup `path` is in this mount, or nil when the mount does not show it.
        func directory(of path: String) -> String? {
            let relative: Substring
            if root == "/" {
                relative = path[...]
            } else if path == root || path.hasPrefix(root + "/") {
                relative = path.dropFirst(root.count)
            } else {
                return nil
            }
            let trimmed = relative.drop { $0 == "/" }
            return trimmed.isEmpty ? mountPoint : (mountPoint == "/" ? "" : mountPoint) + "/" + trimmed
        }

        /// mountinfo's octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash).
        static func unescape(_ field: Substring) -> String {
            guard field.contains("\\") else { return String(field) }
            var bytes: [UInt8] = []
            var utf8 = field.utf8[...]
            while let byte = utf8.popFirst() {
                let digits = utf8.prefix(3)
                if byte == UInt8(ascii: "\\"), digits.count == 3, digits.allSatisfy({ (48...55).contains($0) }) {
                    bytes.append(digits.reduce(0) { $0 &* 8 &+ ($1 - 48) })
                    utf8 = utf8.dropFirst(3)
                } else {
                    bytes.append(byte)
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
