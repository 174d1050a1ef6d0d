import SpliceMedia
import SpliceWire

/// `SegmentWorkOrder` as JSON, assembled from its parts: the plan without its segments and the
/// one segment's spec, both read once per job straight from the plan's stored JSON text. What
/// `JSONValue(encoding: SegmentWorkOrder(…))` produces — the unit tests hold the two equal —
/// without decoding the plan into types and encoding it again.
enum SegmentWorkOrderJSON {
    /// A job's plan as the parts of its work orders.
    struct Parts: Sendable {
        /// The plan's fields but `segments` and those only the stitcher reads.
        var skeleton: [String: JSONValue]
        /// Each segment's spec, by its `index`.
        var specs: [Int: JSONValue]
    }

    /// Splits a stored plan (the JSON of a `SegmentPlan`): nil when it is not one.
    static func parts(ofPlan text: String) -> Parts? {
        guard case .object(var fields)? = try? JSONValue(parsing: Array(text.utf8)),
              case .array(let segments)? = fields.removeValue(forKey: "segments")
        else { return nil }
        for key in SegmentPlan.stitcherOnlyKeys { fields[key] = nil }
        var specs: [Int: JSONValue] = [:]
        for spec in segments {
            guard case .object(let specFields) = spec, case .integer(let index)? = specFields["index"],
                  let index = Int(exactly: index)
            else { return nil }
            if specs[index] == nil { specs[index] = spec }
        }
        return Parts(skeleton: fields, specs: specs)
    }

    static func order(skeleton: [String: JSONValue], spec: JSONValue, segment: Int) -> JSONValue {
        var plan = skeleton
        plan["segments"] = .array([spec])
        return .object(["plan": .object(plan), "segment": .integer(Int64(segment))])
    }
}
