import Foundation
import SpliceJSON
import SpliceMedia
import Testing

@testable import SpliceCluster

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
        let order = try #require(PlannedJob(Self.plan).order(segment))
        #expect(order == SegmentWorkOrder(plan: Self.plan, segment: segment))
        let payload = try JSONPayload(encoding: order)
        #expect(try payload.decode(SegmentWorkOrder.self) == order)
        #expect(payload.description == String(decoding: try JSONEncoder.sorted.encode(order), as: UTF8.self))
    }

    @Test("a segment the plan does not have has no order")
    func missing() {
        #expect(PlannedJob(Self.plan).order(3) == nil)
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
