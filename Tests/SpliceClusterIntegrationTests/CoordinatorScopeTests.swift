import Foundation
import SpliceCore
import SpliceJSON
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator

/// The ZeroMQ API's admin keys limited to scopes (`--admin-keys` lines may name them): the same
/// scopes as the HTTP API's tokens, so "submit-only" exists on both doors (docs/api.md).
@Suite("Coordinator: admin keys with scopes", .timeLimit(.minutes(3)))
struct CoordinatorScopeTests {
    @Test("a read-only key reads and is refused SUBMIT, CANCEL and ENROLL with ERROR forbidden; a submit-only key the reverse")
    func scopes() async throws {
        let server = try CurveKeyPair.generate()
        let reader = try CurveKeyPair.generate()
        let submitter = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let worker = try CurveKeyPair.generate()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.keys = server
            configuration.adminKeys = [reader.publicKey, submitter.publicKey, admin.publicKey]
            configuration.adminKeyScopes = [reader.publicKey: [.read], submitter.publicKey: [.submit]]
        }
        let context = try WireContext()
        func client(_ keys: CurveKeyPair) async throws -> TestClient {
            try await TestClient.connect(to: coordinator.endpoints.api, curve: .client(keys: keys, serverKey: server.publicKey),
                                         context: context)
        }
        let reading = try await client(reader)
        let submitting = try await client(submitter)
        let full = try await client(admin)
        let job = JobID(UUID())
        // Reading is allowed to the reader: an unknown job is not-found, not forbidden.
        guard case .error(let missing) = try await reading.request(.status(JobStatusQuery(job: job))) else {
            Issue.record("STATUS of an unknown job answered something else")
            return
        }
        #expect(missing.code == .notFound)
        guard case .jobs = try await reading.request(.list(ListJobs())) else {
            Issue.record("LIST was refused to a read key")
            return
        }
        let export = try JSONPayload(encoding: ["fileType": "mp4"])
        let submit = APIRequest.submit(SubmitJob(input: "/nonexistent/in.mov", output: "/tmp/out.mp4", export: export))
        for (label, connection, request) in [
            ("reader SUBMIT", reading, submit),
            ("reader CANCEL", reading, .cancel(CancelJob(job: job))),
            ("reader ENROLL", reading, .enroll(EnrollWorker(publicKey: worker.publicKey))),
            ("reader TOKEN_CREATE", reading, .createToken(CreateToken(name: "x", scopes: [.read]))),
            ("submitter LIST", submitting, .list(ListJobs())),
            ("submitter STATUS", submitting, .status(JobStatusQuery(job: job))),
        ] as [(String, TestClient, APIRequest)] {
            guard case .error(let error) = try await connection.request(request) else {
                Issue.record("\(label) was not refused")
                continue
            }
            #expect(error.code == .forbidden, "\(label): \(error.code) \(error.message)")
        }
        // The submitter's SUBMIT passes the scope check and fails on its input, as anyone's would.
        guard case .error(let refused) = try await submitting.request(submit) else {
            Issue.record("a SUBMIT of a missing input was accepted")
            return
        }
        #expect(refused.code == .invalidRequest)
        // A key without scopes on its line may do everything.
        guard case .workerKey = try await full.request(.enroll(EnrollWorker(publicKey: worker.publicKey))) else {
            Issue.record("the unlimited admin key could not enroll")
            return
        }
        try await coordinator.stop()
    }
}
