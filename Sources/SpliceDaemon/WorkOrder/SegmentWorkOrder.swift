public import Foundation
public import SpliceCore
public import SpliceMedia
package import SpliceJSON

/// The `spec` of an ASSIGN: everything a worker needs to encode one segment. It carries the job's
/// plan cut down to that one segment, so every worker resolves identical encoder settings from
/// identical inputs (and the stitcher can join what they write).
///
/// On the wire it is `{"plan": <the plan without segments>, "spec": <the segment>}`: the plan part
/// is the same in every order of a job, so the coordinator encodes it once per job
/// (``PlannedJob``) and each ASSIGN encodes only its segment.
public struct SegmentWorkOrder: Sendable, Codable, Hashable {
    /// The job's plan with `segments` holding only the segment to encode (and without what only
    /// the stitcher reads: `SegmentPlan.forWorkers()`).
    public var plan: SegmentPlan
    /// The segment to encode.
    public var segment: Int
    /// `plan` without its segments, encoded: the same for every order of a job.
    private var encodedSkeleton: JSONPayload?

    /// The order for segment `index` of `plan`.
    public init(plan: SegmentPlan, segment index: Int) {
        var single = plan.forWorkers()
        single.segments = plan.segments.filter { $0.index == index }
        self.plan = single
        self.segment = index
    }

    /// The order for `spec`, from its plan with the segments left out (what the coordinator keeps
    /// per job, so that building an order walks no other segment) and that plan encoded.
    init(skeleton: SegmentPlan, encoded: JSONPayload, spec: SegmentSpec) {
        var single = skeleton
        single.segments = [spec]
        self.plan = single
        self.segment = spec.index
        self.encodedSkeleton = encoded
    }

    private enum CodingKeys: String, CodingKey {
        case plan, spec
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let spec = try container.decode(SegmentSpec.self, forKey: .spec)
        var plan = try container.decode(SegmentPlan.self, forKey: .plan)
        guard plan.segments.isEmpty else {
            throw DecodingError.dataCorruptedError(
                forKey: .plan, in: container, debugDescription: "a work order's plan carries no segments; its segment is `spec`")
        }
        plan.segments = [spec]
        self.plan = plan
        self.segment = spec.index
    }

    public func encode(to encoder: any Encoder) throws {
        guard let spec = plan.segments.first(where: { $0.index == segment }) else {
            throw EncodingError.invalidValue(segment, .init(
                codingPath: encoder.codingPath, debugDescription: "the plan has no segment \(segment)"))
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let encodedSkeleton {
            try container.encode(encodedSkeleton, forKey: .plan)
        } else {
            var skeleton = plan
            skeleton.segments = []
            try container.encode(skeleton, forKey: .plan)
        }
        try container.encode(spec, forKey: .spec)
    }

    /// Orders are equal when they order the same work, however they were made.
    public static func == (lhs: SegmentWorkOrder, rhs: SegmentWorkOrder) -> Bool {
        lhs.plan == rhs.plan && lhs.segment == rhs.segment
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(plan)
        hasher.combine(segment)
    }
}

/// A job's plan as the coordinator keeps it to build work orders: decoded once, the segments
/// apart by index, the rest encoded once.
package struct PlannedJob: Sendable {
    /// The plan without its segments.
    let skeleton: SegmentPlan
    /// `skeleton`, encoded: the `plan` of every work order of the job.
    let encodedSkeleton: JSONPayload
    let specs: [Int: SegmentSpec]

    package init(_ plan: SegmentPlan) throws(JSONError) {
        // What only the stitcher reads (annotations, chapters, notices) stays out of every ASSIGN.
        var skeleton = plan.forWorkers()
        skeleton.segments = []
        self.skeleton = skeleton
        encodedSkeleton = try JSONPayload(encoding: skeleton)
        specs = Dictionary(plan.segments.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The job's source, as the plan names it.
    package var source: String { skeleton.source }

    /// The plan for workers with every segment, in index order.
    package var workerPlan: SegmentPlan {
        var plan = skeleton
        plan.segments = specs.values.sorted { $0.index < $1.index }
        return plan
    }

    /// The work order of segment `index`; nil when the plan has no such segment.
    package func order(_ index: Int) -> SegmentWorkOrder? {
        specs[index].map { SegmentWorkOrder(skeleton: skeleton, encoded: encodedSkeleton, spec: $0) }
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
