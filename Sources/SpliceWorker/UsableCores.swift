internal import CSpliceSystem
internal import Foundation

/// The cores this process may use, which a worker divides among its slots: the CPUs of its
/// affinity mask (`taskset`, a cpuset, Kubernetes' static CPU manager), capped by the CPU
/// bandwidth limit of its cgroup (``CgroupCPULimit``: Docker's `--cpus`, a Kubernetes CPU limit).
/// `ProcessInfo.activeProcessorCount` sees neither: it counts the machine's online CPUs.
public struct UsableCores: Sendable, Hashable, CustomStringConvertible {
    /// The smaller of ``affinity`` and the cgroup limit's cores; at least 1.
    public let count: Int
    /// CPUs in the affinity mask.
    public let affinity: Int
    /// The tightest cgroup CPU limit, nil for none.
    public let cgroupLimit: CgroupCPULimit?

    public init(affinity: Int, cgroupLimit: CgroupCPULimit?) {
        self.affinity = max(1, affinity)
        self.cgroupLimit = cgroupLimit
        self.count = min(self.affinity, cgroupLimit?.cores ?? self.affinity)
    }

    /// This process's, read now (the affinity mask from the kernel, the limit from `/proc` and the
    /// cgroup file system). When the kernel will not say, the machine's processor count stands in.
    public static func ofThisProcess() -> UsableCores {
        let affinity = splice_affinity_cpu_count()
        return UsableCores(affinity: affinity > 0 ? Int(affinity) : ProcessInfo.processInfo.processorCount,
                           cgroupLimit: CgroupCPULimit.ofThisProcess())
    }

    /// `4 (affinity 64, cgroup limit 400000/100000 µs (4 cores) in …)`.
    public var description: String {
        "\(count) (affinity \(affinity)" + (cgroupLimit.map { ", cgroup limit \($0)" } ?? ", no cgroup limit") + ")"
    }
}
