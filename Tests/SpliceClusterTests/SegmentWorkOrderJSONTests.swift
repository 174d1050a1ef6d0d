import Foundation
import SpliceMedia
import SpliceWire
import Testing

@testable import SpliceCluster

@Suite("ASSIGN spec assembled from a cached plan")
struct SegmentWorkOrderJSONTests {
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

    @Test("equals encoding the whole SegmentWorkOrder, and decodes back to it", arguments: [0, 1, 2])
    func sameAsEncoding(segment: Int) throws {
        var skeleton = Self.plan
        skeleton.segments = []
        guard case .object(let fields) = try JSONValue(encoding: skeleton) else {
            Issue.record("a plan encodes as an object")
            return
        }
        let spec = try #require(Self.plan.segments.first { $0.index == segment })
        let assembled = SegmentWorkOrderJSON.order(skeleton: fields, spec: try JSONValue(encoding: spec), segment: segment)
        let order = SegmentWorkOrder(plan: Self.plan, segment: segment)
        #expect(assembled == (try JSONValue(encoding: order)))
        #expect(try assembled.decode(SegmentWorkOrder.self) == order)
    }
}
