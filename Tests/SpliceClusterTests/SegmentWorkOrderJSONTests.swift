import Foundation
import SpliceMedia
import SpliceStore
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
        // As the store keeps it: encoded by the planner, read back as the server prints jsonb
        // (keys reordered, spaces after separators).
        let stored = try PostgresJSON(encoding: Self.plan).text
        let printed = try #require(String(data: try JSONSerialization.data(
            withJSONObject: JSONSerialization.jsonObject(with: Data(stored.utf8)), options: [.prettyPrinted]),
            encoding: .utf8))
        for text in [stored, printed] {
            let parts = try #require(SegmentWorkOrderJSON.parts(ofPlan: text))
            let spec = try #require(parts.specs[segment])
            let assembled = SegmentWorkOrderJSON.order(skeleton: parts.skeleton, spec: spec, segment: segment)
            let order = SegmentWorkOrder(plan: Self.plan, segment: segment)
            #expect(assembled == (try JSONValue(encoding: order)))
            #expect(try assembled.decode(SegmentWorkOrder.self) == order)
        }
    }

    @Test("a stored plan that is not a segment plan is refused", arguments: [
        "", "[]", #"{"id": "p"}"#, #"{"segments": {}}"#, #"{"segments": [{"videoEnd": 1}]}"#,
        #"{"segments": [{"index": 1.5}]}"#,
    ])
    func notAPlan(text: String) {
        #expect(SegmentWorkOrderJSON.parts(ofPlan: text) == nil)
    }
}
