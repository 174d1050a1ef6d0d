public import Foundation
public import SpliceCore
public import SpliceMedia

/// The `spec` of an ASSIGN: everything a worker needs to encode one segment. It carries the job's
/// plan cut down to that one segment, so every worker resolves identical encoder settings from
/// identical inputs (and the stitcher can join what they write).
public struct SegmentWorkOrder: Sendable, Codable, Hashable {
    /// The job's plan with `segments` holding only the segment to encode (and without what only
    /// the stitcher reads: `SegmentPlan.forWorkers()`).
    public var plan: SegmentPlan
    /// The segment to encode.
    public var segment: Int

    /// The order for segment `index` of `plan`.
    public init(plan: SegmentPlan, segment index: Int) {
        var single = plan.forWorkers()
        single.segments = plan.segments.filter { $0.index == index }
        self.plan = single
        self.segment = index
    }

    /// The order for `spec`, from its plan with the segments left out (what the coordinator keeps
    /// per job, so that building an order does not walk every segment of the plan).
    init(skeleton: SegmentPlan, spec: SegmentSpec) {
        var single = skeleton
        single.segments = [spec]
        self.plan = single
        self.segment = spec.index
    }
}

/// A job's plan as the coordinator keeps it to build work orders: decoded once, the segments
/// apart by index.
struct PlannedJob: Sendable {
    /// The plan without its segments.
    let skeleton: SegmentPlan
    let specs: [Int: SegmentSpec]

    init(_ plan: SegmentPlan) {
        // What only the stitcher reads (annotations, chapters, notices) stays out of every ASSIGN.
        var skeleton = plan.forWorkers()
        skeleton.segments = []
        self.skeleton = skeleton
        specs = Dictionary(plan.segments.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The plan for workers with every segment, in index order.
    var workerPlan: SegmentPlan {
        var plan = skeleton
        plan.segments = specs.values.sorted { $0.index < $1.index }
        return plan
    }

    /// The work order of segment `index`; nil when the plan has no such segment.
    func order(_ index: Int) -> SegmentWorkOrder? {
        specs[index].map { SegmentWorkOrder(skeleton: skeleton, spec: $0) }
    }
}

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
