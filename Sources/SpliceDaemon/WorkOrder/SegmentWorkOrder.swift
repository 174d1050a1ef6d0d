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

