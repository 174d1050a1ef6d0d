import SpliceWire

/// `SegmentWorkOrder` as JSON, assembled from its parts: the plan without its segments (encoded
/// once per job) and the one segment's spec. What `JSONValue(encoding: SegmentWorkOrder(…))`
/// produces — the unit tests hold the two equal — without encoding the whole plan again for
/// every assignment.
enum SegmentWorkOrderJSON {
    static func order(skeleton: [String: JSONValue], spec: JSONValue, segment: Int) -> JSONValue {
        var plan = skeleton
        plan["segments"] = .array([spec])
        return .object(["plan": .object(plan), "segment": .integer(Int64(segment))])
    }
}
