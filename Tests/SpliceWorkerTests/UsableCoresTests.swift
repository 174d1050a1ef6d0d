import Testing
@testable import SpliceWorker


/// The cores a worker may use: the kernel's cgroup texts as real machines write them (cgroup v2
/// hosts and containers, cgroup v1 Docker, a hybrid host), the walk up a cgroup's ancestors, and
/// how the cores are shared among slots.
@Suite("Usable cores")
struct UsableCoresTests {
    typealias Bandwidth = CgroupCPULimit.Bandwidth

    // MARK: - cpu.max, cpu.cfs_quota_us

    @Test("cpu.max: `max` is no limit; a quota is ceil(quota ÷ period) cores; anything else is unreadable")
    func cpuMax() {
        #expect(Bandwidth(cpuMax: "max 100000\n") == .unlimited)
        #expect(Bandwidth(cpuMax: "200000 100000\n") == .limited(quota: 200_000, period: 100_000))
        let cases: [(String, Int)] = [
            ("200000 100000\n", 2), ("150000 100000\n", 2), ("100000 100000\n", 1), ("50000 100000\n", 1),
            ("1000 100000\n", 1), ("400000 100000\n", 4), ("100001 100000\n", 2), ("6400000 100000\n", 64),
            ("250000 50000\n", 5),
        ]
        for (text, cores) in cases {
            guard case .limited(let quota, let period) = Bandwidth(cpuMax: text) else {
                Issue.record("\(text) did not parse")
                continue
            }
            #expect(CgroupCPULimit.cores(quota: quota, period: period) == cores, "\(text)")
        }
        for garbage in ["", "max", "max 0", "-1 100000", "0 100000", "abc 100000", "150000", "150000 100000 7", "1.5 1"] {
            #expect(Bandwidth(cpuMax: garbage) == nil, "\(garbage)")
        }
    }

    @Test("cgroup v1: cfs_quota_us −1 is no limit, a quota over cfs_period_us is a limit")
    func cfs() {
        #expect(Bandwidth(cfsQuota: "-1\n", cfsPeriod: "100000\n") == .unlimited)
        #expect(Bandwidth(cfsQuota: "150000\n", cfsPeriod: "100000\n") == .limited(quota: 150_000, period: 100_000))
        #expect(Bandwidth(cfsQuota: "0\n", cfsPeriod: "100000\n") == nil)
        #expect(Bandwidth(cfsQuota: "50000\n", cfsPeriod: "0\n") == nil)
        #expect(Bandwidth(cfsQuota: "x\n", cfsPeriod: "100000\n") == nil)
    }

    // MARK: - /proc/self/cgroup and /proc/self/mountinfo

    @Test("/proc/self/cgroup: the v2 path, and the v1 path of the hierarchy holding `cpu`")
    func procSelfCgroup() {
        let systemd = CgroupCPULimit.Membership(procSelfCgroup: "0::/user.slice/user-1000.slice/session-3.scope\n")
        #expect(systemd.unified == "/user.slice/user-1000.slice/session-3.scope" && systemd.cpuV1 == nil)
        let namespaced = CgroupCPULimit.Membership(procSelfCgroup: "0::/\n")
        #expect(namespaced.unified == "/" && namespaced.cpuV1 == nil)
        let docker = CgroupCPULimit.Membership(procSelfCgroup: Self.dockerV1Cgroup)
        #expect(docker.cpuV1 == "/docker/9f2e41b0c7d3" && docker.unified == nil)
        // A hybrid host (this test machine's own text): v1 controllers, an empty v2 hierarchy.
        let hybrid = CgroupCPULimit.Membership(procSelfCgroup: Self.hybridCgroup)
        #expect(hybrid.cpuV1 == "/w21probe" && hybrid.unified == "/")
        #expect(CgroupCPULimit.Membership(procSelfCgroup: "garbage\n\n1:cpu\n") == .init(procSelfCgroup: ""))
    }

    @Test("/proc/self/mountinfo: cgroup2 mounts and v1 mounts of `cpu` (not cpuset), root and escapes read")
    func mountinfo() {
        let mounts = CgroupCPULimit.Mount.parse(mountinfo: """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
            1145 1140 0:33 /docker/9f2e41b0c7d3 /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,cpu,cpuacct
            1146 1140 0:34 /docker/9f2e41b0c7d3 /sys/fs/cgroup/cpuset ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,cpuset
            1147 1140 0:35 / /mnt/odd\\040name rw - cgroup2 cgroup2 rw
            """)
        #expect(mounts == [
            .init(version: .unified, root: "/", mountPoint: "/sys/fs/cgroup"),
            .init(version: .v1, root: "/docker/9f2e41b0c7d3", mountPoint: "/sys/fs/cgroup/cpu,cpuacct"),
            .init(version: .unified, root: "/", mountPoint: "/mnt/odd name"),
        ])
        let v1 = mounts[1]
        #expect(v1.directory(of: "/docker/9f2e41b0c7d3") == "/sys/fs/cgroup/cpu,cpuacct")
        #expect(v1.directory(of: "/docker/9f2e41b0c7d3/inner") == "/sys/fs/cgroup/cpu,cpuacct/inner")
        #expect(v1.directory(of: "/docker/other") == nil, "a cgroup the mount does not show")
        #expect(v1.directory(of: "/docker/9f2e41b0c7d3x") == nil)
        #expect(mounts[0].directory(of: "/") == "/sys/fs/cgroup")
        #expect(mounts[0].directory(of: "/a/b") == "/sys/fs/cgroup/a/b")
    }

    // MARK: - The tightest limit along the ancestors

    @Test("a Kubernetes pod's limit binds the container below it; a tighter container limit wins")
    func kubernetes() {
        let pod = "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f0c.slice"
        let container = pod + "/cri-containerd-3b1f.scope"
        let cgroup = "0::" + container.dropFirst("/sys/fs/cgroup".count) + "\n"
        var files = [container + "/cpu.max": "max 100000\n", pod + "/cpu.max": "400000 100000\n",
                     "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.max": "max 100000\n",
                     "/sys/fs/cgroup/kubepods.slice/cpu.max": "max 100000\n"]
        let limit = CgroupCPULimit.tightest(cgroup: cgroup, mountinfo: Self.hostV2Mountinfo) { files[$0] }
        #expect(limit == CgroupCPULimit(quotaMicroseconds: 400_000, periodMicroseconds: 100_000, cgroup: pod))
        #expect(limit?.cores == 4)
        files[container + "/cpu.max"] = "150000 100000\n"
        let tighter = CgroupCPULimit.tightest(cgroup: cgroup, mountinfo: Self.hostV2Mountinfo) { files[$0] }
        #expect(tighter?.cores == 2 && tighter?.cgroup == container)
    }

    @Test("Docker --cpus: 1.5 in a cgroup namespace (v2) is 2 cores; 0.5 under cgroup v1 is 1")
    func docker() {
        let v2 = CgroupCPULimit.tightest(cgroup: "0::/\n", mountinfo: Self.hostV2Mountinfo) {
            ["/sys/fs/cgroup/cpu.max": "150000 100000\n"][$0]
        }
        #expect(v2 == CgroupCPULimit(quotaMicroseconds: 150_000, periodMicroseconds: 100_000, cgroup: "/sys/fs/cgroup"))
        #expect(v2?.cores == 2)
        let v1Mount = "1145 1140 0:33 /docker/9f2e41b0c7d3 /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup rw,cpu,cpuacct"
        let v1 = CgroupCPULimit.tightest(cgroup: Self.dockerV1Cgroup, mountinfo: v1Mount) {
            ["/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "50000\n",
             "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"][$0]
        }
        #expect(v1?.cores == 1 && v1?.cgroup == "/sys/fs/cgroup/cpu,cpuacct")
    }

    @Test("a hybrid host: the v1 cpu hierarchy's quota counts, the empty v2 one has none")
    func hybrid() {
        let files = ["/sys/fs/cgroup/cpu/w21probe/cpu.cfs_quota_us": "50000\n",
                     "/sys/fs/cgroup/cpu/w21probe/cpu.cfs_period_us": "100000\n",
                     "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"]
        let limit = CgroupCPULimit.tightest(cgroup: Self.hybridCgroup, mountinfo: Self.hybridMountinfo) { files[$0] }
        #expect(limit?.cores == 1 && limit?.cgroup == "/sys/fs/cgroup/cpu/w21probe")
        let unlimited = CgroupCPULimit.tightest(cgroup: Self.hybridCgroup.replacing("/w21probe", with: "/"),
                                                mountinfo: Self.hybridMountinfo) { files[$0] }
        #expect(unlimited == nil)
    }

    @Test("no limit anywhere, no file, or a cgroup outside every mount: no limit")
    func none() {
        #expect(CgroupCPULimit.tightest(cgroup: "0::/a\n", mountinfo: Self.hostV2Mountinfo) { _ in nil } == nil)
        #expect(CgroupCPULimit.tightest(cgroup: "0::/a\n", mountinfo: Self.hostV2Mountinfo) { _ in "max 100000\n" } == nil)
        #expect(CgroupCPULimit.tightest(cgroup: "0::/a\n", mountinfo: "") { _ in "100000 100000\n" } == nil)
        #expect(CgroupCPULimit.levels(from: "/sys/fs/cgroup/a/b", upTo: "/sys/fs/cgroup")
            == ["/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"])
    }

    // MARK: - Sharing among slots

    @Test("usable cores: the affinity, capped by the cgroup limit")
    func usable() {
        let four = CgroupCPULimit(quotaMicroseconds: 400_000, periodMicroseconds: 100_000, cgroup: "/c")
        #expect(UsableCores(affinity: 64, cgroupLimit: four).count == 4)
        #expect(UsableCores(affinity: 2, cgroupLimit: four).count == 2)
        #expect(UsableCores(affinity: 12, cgroupLimit: nil).count == 12)
    }

    @Test("threads: usable ÷ slots while others run or wait; all usable cores for an encode alone")
    func threads() {
        let threads = EncoderThreads(usableCores: 8, slots: 4, fixed: nil)
        #expect(threads.perSlot == 2)
        threads.encodeStarted()
        #expect(threads.forOpeningEncoder() == 8, "alone: the idle slots' cores too")
        threads.assignQueued()
        #expect(threads.forOpeningEncoder() == 2, "an ASSIGN waiting to start takes a slot")
        threads.assignHandled()
        threads.encodeStarted()
        #expect(threads.forOpeningEncoder() == 2)
        threads.encodeEnded()
        #expect(threads.forOpeningEncoder() == 8)
        #expect(EncoderThreads(usableCores: 10, slots: 4, fixed: nil).perSlot == 2)
        #expect(EncoderThreads(usableCores: 2, slots: 4, fixed: nil).perSlot == 1, "at least 1")
        let one = EncoderThreads(usableCores: 6, slots: 1, fixed: nil)
        one.encodeStarted()
        #expect(one.perSlot == 6 && one.forOpeningEncoder() == 6)
        let fixed = EncoderThreads(usableCores: 8, slots: 4, fixed: 3)
        fixed.encodeStarted()
        #expect(fixed.perSlot == 3 && fixed.forOpeningEncoder() == 3, "--codec-threads is every encode's")
    }

    // MARK: - Texts from real machines

    static let dockerV1Cgroup = """
        12:hugetlb:/docker/9f2e41b0c7d3
        11:memory:/docker/9f2e41b0c7d3
        10:cpuset:/docker/9f2e41b0c7d3
        4:cpu,cpuacct:/docker/9f2e41b0c7d3
        1:name=systemd:/docker/9f2e41b0c7d3

        """

    static let hybridCgroup = """
        9:name=systemd:/
        8:pids:/
        4:memory:/process_api/48bba9ec578ae951d62e099df506c443
        3:cpuset:/
        2:cpuacct:/
        1:cpu:/w21probe
        0::/

        """

    static let hybridMountinfo = """
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
        34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

        """

    static let hostV2Mountinfo = """
        22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
        35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot

        """
}
