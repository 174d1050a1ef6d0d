import Foundation
import SpliceTestSupport
import Testing

/// How `splice coordinator` ends when it cannot run: exit 1 and one error log line naming the
/// service and the reason (the runner shared with `splice worker`; unit-tested in spliceTests).
@Suite("splice coordinator failing", .timeLimit(.minutes(2)))
struct DaemonFailureTests {
    @Test("a coordinator that cannot start exits 1 with one error line naming it and the reason")
    func cannotStart() async throws {
        // Listening on every interface without CURVE keys is refused before anything is opened.
        let result = try await SpliceProcess.run([
            "coordinator", "--database", "postgresql://splice@127.0.0.1:\(try unusedPort())/splice",
            "--workers-endpoint", "tcp://0.0.0.0:\(try unusedPort())",
            "--api-endpoint", "tcp://127.0.0.1:\(try unusedPort())",
            "--spool", Fixtures.temporaryDirectory("spool").path,
        ])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.contains(#"level=error msg="service failed; stopped" service=coordinator"#) == true)
        #expect(lines.first?.contains("without CURVE keys") == true)
    }
}
