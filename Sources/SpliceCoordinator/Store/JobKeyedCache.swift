import SpliceCore
import Synchronization

/// A small per-job cache for things that never change once a job is planned (its segment ids,
/// its plan). Bounded: when it grows past `limit` jobs it starts over, and entries are loaded
/// again on demand — losing it costs a query, never correctness.
final class JobKeyedCache<Value: Sendable>: Sendable {
    private let entries = Mutex<[JobID: Value]>([:])
    /// Loads in progress, so concurrent misses for one job share a single load.
    private let loading = Mutex<[JobID: Task<Value?, any Error>]>([:])
    private let limit: Int

    init(limit: Int = 512) {
        self.limit = limit
    }

    subscript(job: JobID) -> Value? {
        entries.withLock { $0[job] }
    }

    /// The cached value, or the one `load` returns (cached when not nil). Callers that miss at
    /// the same time wait for the same load.
    func value(for job: JobID, load: @escaping @Sendable () async throws -> Value?) async throws -> Value? {
        if let cached = self[job] { return cached }
        let task = loading.withLock { loading in
            if let running = loading[job] { return running }
            let started = Task { try await load() }
            loading[job] = started
            return started
        }
        defer { _ = loading.withLock { $0.removeValue(forKey: job) } }
        guard let loaded = try await task.value else { return nil }
        store(loaded, for: job)
        return loaded
    }

    func store(_ value: Value, for job: JobID) {
        entries.withLock { entries in
            if entries.count >= limit && entries[job] == nil { entries.removeAll(keepingCapacity: true) }
            entries[job] = value
        }
    }

    func forget(_ job: JobID) {
        _ = entries.withLock { $0.removeValue(forKey: job) }
    }
}
