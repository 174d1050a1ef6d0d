public import Foundation
public import SpliceCore

/// Where segment files live in the spool directory that coordinator and workers share (a local
/// folder for one machine, an NFS export for many). Every attempt writes its own file, so a slow
/// worker's late output can never overwrite the one the database recorded.
public struct SpoolLayout: Sendable, Hashable {
    public var root: URL

    public init(root: URL) {
        self.root = root
    }

    /// `<root>/jobs/<job>/`.
    public func jobDirectory(_ job: JobID) -> URL {
        root.appendingPathComponent("jobs").appendingPathComponent(job.description)
    }

    /// `<root>/jobs/<job>/segment-00012.a2-7c1e9d2a.splseg` for segment 12, attempt 2, lease 7c1e9d2a….
    public func segmentFile(job: JobID, segment: Int, attempt: Int, leaseToken: LeaseToken) -> URL {
        URL(fileURLWithPath: segmentPath(job: job, segment: segment, attempt: attempt, leaseToken: leaseToken))
    }

    /// `segmentFile` as a path, built as text: the coordinator names one file per assignment,
    /// and `URL.appendingPathComponent` cost more than the rest of building the ASSIGN.
    public func segmentPath(job: JobID, segment: Int, attempt: Int, leaseToken: LeaseToken) -> String {
        let index = String(segment)
        let padded = String(repeating: "0", count: max(0, 5 - index.count)) + index
        var root = root.path
        if !root.hasSuffix("/") { root += "/" }
        return root + "jobs/" + job.description + "/segment-" + padded + ".a" + String(attempt) + "-"
            + leaseToken.description.prefix(8)
            + ".splseg"
    }
}
