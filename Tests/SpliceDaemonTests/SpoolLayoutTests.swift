import Foundation
import SpliceCore
import Testing
import SpliceDaemon
import SpliceWorker

@Suite("Spool layout")
struct SpoolLayoutTests {
    @Test("a segment's path is its attempt-unique file in the job's directory", arguments: ["/srv/spool", "/srv/spool/"])
    func segmentPath(root: String) {
        let layout = SpoolLayout(root: URL(fileURLWithPath: root))
        let job = JobID("7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c")!
        let token = LeaseToken("7c1e9d2a-5b7e-4c11-9f00-abcdef012345")!
        let path = layout.segmentPath(job: job, segment: 12, attempt: 2, leaseToken: token)
        #expect(path == "/srv/spool/jobs/7f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c/segment-00012.a2-7c1e9d2a.splseg")
        #expect(path == layout.jobDirectory(job).appendingPathComponent("segment-00012.a2-7c1e9d2a.splseg").path)
        #expect(layout.segmentFile(job: job, segment: 12, attempt: 2, leaseToken: token).path == path)
        #expect(layout.segmentPath(job: job, segment: 123_456, attempt: 10, leaseToken: token)
            == "/srv/spool/jobs/\(job)/segment-123456.a10-7c1e9d2a.splseg")
    }
}
