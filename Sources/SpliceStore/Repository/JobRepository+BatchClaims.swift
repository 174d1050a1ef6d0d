public import Foundation
import SpliceConcurrency

extension JobRepository {
    /// What one worker asks a batched claim for.
    public struct ClaimDemand: Sendable, Hashable {
        public var workerID: UUID
        public var limit: Int
        /// The encoders the worker has (its HELLO's): it is given no segment of a job that names
        /// another (`segments.required_encoder`). Nil: it is given none that names one.
        public var encoders: [String]?

        public init(workerID: UUID, limit: Int, encoders: [String]? = nil) {
            self.workerID = workerID
            self.limit = limit
            self.encoders = encoders
        }
    }

    /// `claimSegments(for:limit:leaseDuration:)` for several workers in one statement (the
    /// single-worker claim is this with one demand): the coordinator's dispatcher gathers every
    /// free slot and claims once per round, so claiming costs one transaction per round instead
    /// of one per worker. Segments are taken in claim order
    /// and dealt out slot by slot (every worker's first slot, then every worker's second…), so
    /// when there are fewer segments than slots each worker still gets its share. Revoked or
    /// unknown workers get nothing. Every lease gets a fresh token; the same fencing rules apply.
    ///
    /// A job that names its video encoder is only claimed for workers that have it: workers with
    /// the same encoders claim together, so a farm of one kind of worker still claims in one
    /// statement, and one with k kinds in k.
    public func claimSegments(forWorkers demands: [ClaimDemand], leaseDuration: Duration) async throws
        -> [UUID: [SegmentLease]]
    {
        let demands = demands.filter { $0.limit > 0 }
        guard !demands.isEmpty else { return [:] }
        var groups: [[String]: [ClaimDemand]] = [:]
        var order: [[String]] = []
        for demand in demands {
            let encoders = Array(Set(demand.encoders ?? [])).sorted()
            if groups[encoders] == nil { order.append(encoders) }
            groups[encoders, default: []].append(demand)
        }
        var leases: [UUID: [SegmentLease]] = [:]
        for encoders in order {
            let claimed = try await claimSegments(forGroup: groups[encoders]!, encoders: encoders, leaseDuration: leaseDuration)
            leases.merge(claimed) { $0 + $1 }
        }
        return leases
    }

    /// One claim statement for workers that all have `encoders`.
    private func claimSegments(forGroup demands: [ClaimDemand], encoders: [String], leaseDuration: Duration) async throws
        -> [UUID: [SegmentLease]]
    {
        let rows = try await client.query("""
            WITH demand AS (
                SELECT d.worker_id, d.position, slot.number
                FROM unnest(\(demands.map(\.workerID)), \(demands.map(\.limit)))
                         WITH ORDINALITY AS d(worker_id, slots, position)
                CROSS JOIN LATERAL generate_series(1, d.slots) AS slot(number)
                WHERE EXISTS (SELECT 1 FROM workers w WHERE w.id = d.worker_id AND w.state <> 'revoked')
            ), wanted AS (
                SELECT worker_id, row_number() OVER (ORDER BY number, position) AS n FROM demand
            ), locked AS (
                SELECT s.id, s.priority, s.job_created_at, s.job_id, s.cost, s.index FROM segments s
                WHERE s.state = 'pending' AND s.next_attempt_at <= now()
                    AND (s.required_encoder IS NULL OR s.required_encoder = ANY(\(encoders)))
                ORDER BY s.priority DESC, s.job_created_at, s.job_id, s.cost DESC, s.index
                LIMIT (SELECT count(*) FROM wanted)
                FOR UPDATE SKIP LOCKED
            ), target AS (
                SELECT id, row_number() OVER (ORDER BY priority DESC, job_created_at, job_id, cost DESC, index) AS n FROM locked
            ), paired AS (
                SELECT target.id, wanted.worker_id FROM target JOIN wanted ON wanted.n = target.n
            ), segment AS (
                UPDATE segments s
                SET state = 'leased', attempt = s.attempt + 1, lease_token = gen_random_uuid(),
                    leased_by = paired.worker_id, heartbeat_at = now(), updated_at = now(),
                    lease_expires_at = now() + \(Int64(leaseDuration.wholeMilliseconds)) * interval '1 millisecond'
                FROM paired WHERE s.id = paired.id AND s.state = 'pending'
                RETURNING s.*
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id, lease_token)
                SELECT job_id, id, 'segment_leased', 'pending', 'leased', attempt, leased_by, lease_token FROM segment
            )
            SELECT \(Segment.columns) FROM segment
            ORDER BY priority DESC, job_created_at, job_id, cost DESC, index
            """)
        var leases: [UUID: [SegmentLease]] = [:]
        for row in rows {
            let segment = try Segment(row: row)
            guard let reference = segment.lease, let expiresAt = segment.leaseExpiresAt, let worker = segment.leasedBy
            else {
                throw StoreError(.decodingFailed, "a claimed segment came back without its lease")
            }
            leases[worker, default: []].append(SegmentLease(segment: segment, reference: reference, expiresAt: expiresAt))
        }
        return leases
    }
}
