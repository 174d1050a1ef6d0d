import Foundation
import SpliceTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `splice worker` processes on this real machine: the cores each may use (its CPU affinity, its
/// cgroup's CPU limit) and the encoder threads per slot, as its `/metrics`, its log and
/// `splice workers` show them; and two workers on one host that leave `--metrics-endpoint` alone.
@Suite("A worker on a real machine", .serialized, .timeLimit(.minutes(4)))
struct WorkerMachineTests {
    static let taskset = ["/usr/bin/taskset", "-c", "0"]

    @Test("under `taskset -c 0` a worker counts 1 usable core; /metrics and `splice workers` say so")
    func affinity() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        try await withCleanup({ try? await cluster.stop() }) {
            let pinned = try await cluster.addSpoolWorker(
                named: "pinned", flags: ["--slots", "2", "--metrics-endpoint", "127.0.0.1:0"], wrapper: Self.taskset)
            let free = try await cluster.addSpoolWorker(
                named: "free", flags: ["--slots", "1", "--metrics-endpoint", "127.0.0.1:0"])
            // The oracle: the kernel's own account of each process's affinity mask.
            #expect(try Self.allowedCPUs(of: pinned.process.pid) == 1)
            let allowed = try Self.allowedCPUs(of: free.process.pid)

            let pinnedFigures = try await Self.scrape(pinned)
            #expect(pinnedFigures.value("splice_worker_usable_cores") == 1)
            #expect(pinnedFigures.value("splice_worker_threads_per_slot") == 1)
            #expect(pinnedFigures.value("splice_worker_slots") == 2)
            // Unpinned, it may use what its mask allows unless a cgroup limit (which it logs) is lower;
            // its one slot gets every usable core.
            let freeFigures = try await Self.scrape(free)
            let usable = try #require(freeFigures.value("splice_worker_usable_cores"))
            if free.process.output.contains("cgroup_cpu_limit=none") {
                #expect(usable == Double(allowed), "\(free.process.output)")
            } else {
                #expect(usable >= 1 && usable <= Double(allowed))
            }
            #expect(freeFigures.value("splice_worker_threads_per_slot") == usable)
            #expect(pinned.process.output.contains("usable_cores=1 affinity_cores=1"), "\(pinned.process.output)")

            // What the coordinator heard in each HELLO: `splice workers --json` and the table.
            let workers = try await Self.workersJSON(cluster)
            #expect(workers["pinned"]?["usableCores"] as? Int == 1)
            #expect(workers["pinned"]?["threadsPerSlot"] as? Int == 1)
            #expect(workers["free"]?["usableCores"] as? Int == Int(usable))
            #expect(workers["free"]?["threadsPerSlot"] as? Int == Int(usable))
            let table = try await SpliceProcess.run(["workers", "--coordinator", cluster.coordinator.api])
            let row = try #require(table.stdout.split(separator: "\n").first { $0.contains(" pinned ") }, "\(table.stdout)")
            // SLOTS, CORES, THREADS/SLOT.
            #expect(row.contains(" 2      1      1 "), "\(table.stdout)")
        }
    }

    @Test("in a cgroup limited to half a CPU a worker counts 1 usable core (ceil of 0.5)",
          .enabled(if: CPUCgroup.available, "needs a writable cgroup CPU controller (root) and 2 or more CPUs"))
    func cgroupLimit() async throws {
        let cgroup = try CPUCgroup(quota: 50_000, period: 100_000)
        var cluster = try await LocalCluster.start(workers: 0)
        try await withCleanup({
            try? await cluster.stop()
            await cgroup.remove()
        }) {
            let limited = try await cluster.addSpoolWorker(
                named: "limited", flags: ["--slots", "2", "--metrics-endpoint", "127.0.0.1:0"], wrapper: cgroup.wrapper)
            let allowed = try Self.allowedCPUs(of: limited.process.pid)
            #expect(allowed >= 2, "the control: the affinity alone would allow \(allowed)")
            let figures = try await Self.scrape(limited)
            #expect(figures.value("splice_worker_usable_cores") == 1)
            #expect(figures.value("splice_worker_threads_per_slot") == 1)
            #expect(limited.process.output.contains("in \(cgroup.directory)"), "\(limited.process.output)")
            #expect(try await Self.workersJSON(cluster)["limited"]?["usableCores"] as? Int == 1)
        }
    }

    @Test("two workers on one host without --metrics-endpoint both start; a busy endpoint given explicitly stops one")
    func defaultMetricsEndpoint() async throws {
        var cluster = try await LocalCluster.start(workers: 0)
        try await withCleanup({ try? await cluster.stop() }) {
            // Neither says where: both want the default, 127.0.0.1:9451.
            let first = try await cluster.addSpoolWorker(named: "first", flags: ["--slots", "1", "--codec-threads", "1"])
            let second = try await cluster.addSpoolWorker(named: "second", flags: ["--slots", "1", "--codec-threads", "1"])
            let addresses = try [first, second].map { try #require($0.metrics, "\($0.name) logged no endpoint") }
            #expect(Set(addresses).count == 2, "\(addresses)")
            #expect(addresses.allSatisfy { $0.hasPrefix("127.0.0.1:") })
            // At most one has 9451 (another process may hold it too); whoever moved said so.
            let moved = [first, second].filter {
                $0.process.output.contains("the default operations endpoint is in use")
            }
            #expect(moved.count >= 1, "\(first.process.output)\n\(second.process.output)")
            for worker in [first, second] {
                let port = try #require(worker.metrics.flatMap { Int($0.split(separator: ":").last ?? "") })
                #expect(moved.contains { $0 === worker } ? port > 9451 : port == 9451, "\(worker.name): \(port)")
                #expect(try await Self.scrape(worker).value("splice_worker_registered") == 1)
            }
            // `splice workers` shows where each one's /metrics is.
            let workers = try await Self.workersJSON(cluster)
            #expect(workers["first"]?["metricsEndpoint"] as? String == addresses[0])
            #expect(workers["second"]?["metricsEndpoint"] as? String == addresses[1])

            // An address given explicitly, by flag or by variable, that is busy stays an error.
            let byFlag = try ChildWorker(coordinator: cluster.coordinator.workers, spool: cluster.spool, name: "flag",
                                         flags: ["--metrics-endpoint", addresses[0]])
            let byVariable = try ChildWorker(coordinator: cluster.coordinator.workers, spool: cluster.spool, name: "env",
                                             flags: [], environment: ["SPLICE_METRICS_ENDPOINT": addresses[1]])
            for (worker, address) in [(byFlag, addresses[0]), (byVariable, addresses[1])] {
                let status = await worker.process.exitStatus(within: .seconds(30))
                #expect(status?.status == 1 && status?.signalled == false, "\(worker.process.output)")
                #expect(worker.process.output.contains("\(address) is in use"), "\(worker.process.output)")
            }
        }
    }

    // MARK: - Helpers

    /// CPUs in the affinity mask of process `pid`, from its `Cpus_allowed_list` (`0-3,8`).
    static func allowedCPUs(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        return line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
            .split(separator: ",").reduce(0) { count, range in
                let ends = range.split(separator: "-").compactMap { Int($0) }
                return count + (ends.count == 2 ? ends[1] - ends[0] + 1 : 1)
            }
    }

    static func scrape(_ worker: ChildWorker) async throws -> MetricsText {
        let address = try #require(worker.metrics, "\(worker.name) logged no operations endpoint")
        let response = try #require(await HTTPFetch.get(address, "/metrics"), "no answer from \(address)/metrics")
        return MetricsText(response.body)
    }

    /// `splice workers --json`, by worker name.
    static func workersJSON(_ cluster: LocalCluster) async throws -> [String: [String: Any]] {
        let listing = try await SpliceProcess.run(["workers", "--json", "--coordinator", cluster.coordinator.api])
        #expect(listing.status == 0, "\(listing.stderr)")
        let workers = try #require(try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]])
        return Dictionary(workers.compactMap { worker in (worker["name"] as? String).map { ($0, worker) } }) { a, _ in a }
    }
}

/// A cgroup of its own with a CPU bandwidth limit, under this process's cgroup in whichever
/// hierarchy holds the `cpu` controller (cgroup v2, or v1 on a hybrid host); a process joins it
/// through ``wrapper``. Needs root.
struct CPUCgroup: Sendable {
    let directory: String

    /// Whether one can be made here (a writable `cpu` controller) and there are 2 or more CPUs to
    /// cap. Tried with a probe cgroup, removed at once.
    static let available: Bool = {
        guard geteuid() == 0, ProcessInfo.processInfo.processorCount >= 2,
              let probe = try? CPUCgroup(quota: 100_000, period: 100_000) else { return false }
        return rmdir(probe.directory) == 0
    }()

    init(quota: Int, period: Int) throws {
        let mountinfo = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        let cgroups = try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)
        let name = "splice-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), fields.count > dash + 3, fields[3] == "/" else { continue }
            let isV2 = fields[dash + 1] == "cgroup2"
            let isV1CPU = fields[dash + 1] == "cgroup" && fields[dash + 3].split(separator: ",").contains("cpu")
            guard isV2 || isV1CPU else { continue }
            let own = cgroups.split(separator: "\n").compactMap { entry -> String? in
                let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count == 3 else { return nil }
                let matches = isV2 ? parts[0] == "0" : parts[1].split(separator: ",").contains("cpu")
                return matches ? String(parts[2]) : nil
            }.first
            guard let own else { continue }
            let directory = String(fields[4]) + (own == "/" ? "" : own) + "/" + name
            guard mkdir(directory, 0o755) == 0 else { continue }
            let written = isV2
                ? Self.write("\(quota) \(period)", to: directory + "/cpu.max")
                : Self.write(String(period), to: directory + "/cpu.cfs_period_us")
                    && Self.write(String(quota), to: directory + "/cpu.cfs_quota_us")
            if written {
                self.directory = directory
                return
            }
            rmdir(directory)
        }
        throw TestFailure("no writable cgroup with the cpu controller here")
    }

    /// Runs the worker inside the cgroup: `sh` joins it, then becomes `splice worker`.
    var wrapper: [String] {
        ["/bin/sh", "-c", "echo $$ > '\(directory)/cgroup.procs' && exec \"$0\" \"$@\""]
    }

    /// Removes the cgroup once its processes have gone (retried for a few seconds).
    func remove() async {
        for _ in 0..<50 {
            if rmdir(directory) == 0 || errno == ENOENT { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    private static func write(_ text: String, to path: String) -> Bool {
        (try? text.write(toFile: path, atomically: false, encoding: .utf8)) != nil
    }
}
