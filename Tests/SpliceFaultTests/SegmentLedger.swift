import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport

/// What the store says happened to one job's segments, counted the way Jepsen's queue checker
/// counts a queue's history: a `segment_done` event is an acknowledged write (its COMPLETE was
/// committed and only then acknowledged), the `segments` table is the final read.
///
/// * **committed twice** — segments with more than one `segment_done` event. Must be 0: a
///   segment may be encoded twice (delivery is at least once), its result committed only once.
/// * **lost** — acknowledged results missing from the final read: a `segment_done` whose segment
///   is no longer `done` with that attempt's lease token; and, for a completed job, any segment
///   not done at all. Must be 0.
/// * **unexpected** — results nobody asked for: a `segment_done` whose lease token no
///   `segment_leased` (or `segment_backup_started`) event of that segment issued, or for a
///   segment the job does not have.
///   Must be 0.
struct SegmentLedger: Sendable, CustomStringConvertible {
    var job: Job
    var segments: [Segment]
    var events: [JobEvent]

    static func read(job: String, in cluster: LocalCluster) async throws -> SegmentLedger {
        guard let row = try await cluster.job(job) else { throw TestFailure("job \(job) is not in the store") }
        return SegmentLedger(job: row, segments: try await cluster.segments(of: job),
                             events: try await cluster.events(of: job))
    }

    func events(_ kind: String) -> [JobEvent] { events.filter { $0.kind == kind } }

    /// `segment_done` events per segment id.
    var doneEvents: [Int64: [JobEvent]] {
        var done: [Int64: [JobEvent]] = [:]
        for event in events("segment_done") {
            if let segment = event.segmentID { done[segment, default: []].append(event) }
        }
        return done
    }

    var committedTwice: Int { doneEvents.values.filter { $0.count > 1 }.count }

    var lost: Int {
        let rows = Dictionary(uniqueKeysWithValues: segments.map { ($0.id, $0) })
        var lost = Set<Int64>()
        for (segment, done) in doneEvents {
            for event in done where rows[segment]?.state != .done || rows[segment]?.leaseToken != event.leaseToken {
                lost.insert(segment)
            }
        }
        if job.state == .succeeded {
            for segment in segments where segment.state != .done || doneEvents[segment.id] == nil {
                lost.insert(segment.id)
            }
            if segments.count != job.segmentsTotal || job.segmentsDone != job.segmentsTotal {
                lost.insert(-1)  // the job's own count disagrees with its rows
            }
        }
        return lost.count
    }

    var unexpected: Int {
        let issued = Set((events("segment_leased") + events("segment_backup_started"))
            .map { LeaseKey(segment: $0.segmentID, token: $0.leaseToken) })
        let known = Set(segments.map(\.id))
        return events("segment_done").filter { event in
            !issued.contains(LeaseKey(segment: event.segmentID, token: event.leaseToken))
                || event.segmentID.map { !known.contains($0) } ?? true
        }.count
    }

    /// Attempts started (leases issued).
    var attempts: Int { events("segment_leased").count + events("segment_backup_started").count }

    /// How the job ended, in the API's words where they differ (`completed` is `succeeded`).
    var outcome: String { job.state.rawValue }

    var description: String {
        "job \(job.id) \(job.state.rawValue) (\(job.error ?? "no error")), "
            + "\(job.segmentsDone)/\(job.segmentsTotal) done; "
            + "committed twice \(committedTwice), lost \(lost), unexpected \(unexpected); events: "
            + Dictionary(grouping: events, by: \.kind).map { "\($0.key)=\($0.value.count)" }.sorted()
            .joined(separator: " ")
    }

    private struct LeaseKey: Hashable {
        var segment: Int64?
        var token: LeaseToken?
    }
}
