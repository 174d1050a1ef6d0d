public import Foundation
public import SpliceCore
public import SpliceMedia
package import SpliceJSON

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
