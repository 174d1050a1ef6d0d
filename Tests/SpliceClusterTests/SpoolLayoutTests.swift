import Foundation
import SpliceCluster
import Testing

@Suite("Spool layout")
struct SpoolLayoutTests {
    @Test("a segment's path is its attempt-unique file in the job's directory", arguments: ["/srv/spool", "/srv/spool/"])
    func segmentPath(root: String) {
        let layout = SpoolLayout(root: URL(fileURLWithPath: root))
        let path = layout.segmentPath(job: "7f3a-job", segment: 12, attempt: 2, leaseToken: "7c1e9d2a-5b7e-4c11")
        #expect(path == "/srv/spool/jobs/7f3a-job/segment-00012.a2-7c1e9d2a.splseg")
        #expect(path == layout.jobDirectory("7f3a-job").appendingPathComponent("segment-00012.a2-7c1e9d2a.splseg").path)
        #expect(layout.segmentFile(job: "7f3a-job", segment: 12, attempt: 2, leaseToken: "7c1e9d2a-5b7e-4c11").path == path)
        #expect(layout.segmentPath(job: "j", segment: 123_456, attempt: 10, leaseToken: "ab")
            == "/srv/spool/jobs/j/segment-123456.a10-ab.splseg")
    }
}
