import Foundation
import SpliceJSON
import SpliceMedia
import Testing
@testable import SpliceDaemon


@Suite("Work orders from a job's plan, decoded once")
struct PlannedJobTests {
    static let plan: SegmentPlan = {
        let json = """
            {"id": "plan-1", "source": "/media/in.mp4", "outputFileType": "mp4", "optimizesForNetworkUse": true,
             "metadata": {"title": "t"}, "outputZero": {"value": 0, "timescale": 1},
             "targetDuration": {"value": 10, "timescale": 1},
             "videoSettings": {"codec": "h264", "preset": "ultrafast", "quality": 23},
             "segments": [
               {"index": 0, "videoEnd": {"value": 900900, "timescale": 90000}},
               {"index": 1, "videoStart": {"value": 900900, "timescale": 90000},
                "videoEnd": {"value": 9007199254740993, "timescale": 90000}},
               {"index": 2, "videoStart": {"value": 9007199254740993, "timescale": 90000}}
             ]}
            """
        return try! JSONDecoder().decode(SegmentPlan.self, from: Data(json.utf8))
    }()

    @Test("each order is the plan cut to its segment, and travels intact", arguments: [0, 1, 2])
    func order(segment: Int) throws {
        let order = try #require(try PlannedJob(Self.plan).order(segment))
        let fresh = SegmentWorkOrder(plan: Self.plan, segment: segment)
        #expect(order == fresh)
        let payload = try JSONPayload(encoding: order)
        #expect(try payload.decode(SegmentWorkOrder.self) == order)
        // The plan encoded once per job writes the same text as an order encoded whole, here and
        // by Foundation.
        #expect(payload.description == (try JSONPayload(encoding: fresh)).description)
        #expect(payload.description == String(decoding: try JSONEncoder.sorted.encode(order), as: UTF8.self))
        // On the wire: the plan without segments, and the one segment beside it.
        let tree = payload.value
        guard case .object(let fields) = tree, case .object(let plan)? = fields["plan"], case .object(let spec)? = fields["spec"]
        else { Issue.record("not {plan, spec}: \(payload)"); return }
        #expect(plan["segments"] == .array([]))
        #expect(spec["index"] == .integer(Int64(segment)))
    }

    @Test("an order whose plan carries segments, or without its segment, is refused")
    func malformed() throws {
        let payload = try JSONPayload(encoding: SegmentWorkOrder(plan: Self.plan, segment: 1))
        guard case .object(var fields) = payload.value, case .object(var plan)? = fields["plan"] else {
            Issue.record("not an object"); return
        }
        plan["segments"] = .array([fields["spec"]!])
        fields["plan"] = .object(plan)
        #expect(throws: DecodingError.self) { try JSONPayload(.object(fields)).decode(SegmentWorkOrder.self) }
        fields["plan"] = .object(plan.merging(["segments": .array([])]) { $1 })
        fields["spec"] = nil
        #expect(throws: DecodingError.self) { try JSONPayload(.object(fields)).decode(SegmentWorkOrder.self) }
    }

    @Test("a segment the plan does not have has no order")
    func missing() throws {
        #expect(try PlannedJob(Self.plan).order(3) == nil)
    }
}

extension JSONEncoder {
    /// What the protocol's text is held to.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
