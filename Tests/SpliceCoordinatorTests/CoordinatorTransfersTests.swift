import Foundation
import SpliceCore
import SpliceWire
import Testing
@testable import SpliceCoordinator


@Suite("Coordinator transfers: which COMPLETEs pass, which excerpts are cut, withdrawn and deleted")
struct CoordinatorTransfersTests {
    private let worker = WorkerIdentity.connection(RoutingID("w:1"))

    @Test("a session is a transfer worker while its latest HELLO says so")
    func mode() {
        var transfers = CoordinatorTransfers()
        transfers.hello(Hello(workerName: "a", slots: 1, encoders: [], storage: .transfer), from: worker)
        #expect(transfers.isTransferWorker(worker))
        transfers.hello(Hello(workerName: "a", slots: 1, encoders: []), from: worker)
        #expect(!transfers.isTransferWorker(worker), "a HELLO without storage is a shared-spool worker's")
    }

    @Test("one fetch per result at a time; verified only when it succeeded; a failed one may start again")
    func fetches() {
        var transfers = CoordinatorTransfers()
        let token = LeaseToken(UUID())
        let first = transfers.startFetch(token), second = transfers.startFetch(token)
        #expect(first)
        #expect(!second, "a resent COMPLETE does not start a second fetch")
        transfers.fetchEnded(token, verified: false)
        #expect(!transfers.isVerified(token))
        let again = transfers.startFetch(token)
        #expect(again, "the next COMPLETE asks again")
        transfers.fetchEnded(token, verified: true)
        #expect(transfers.isVerified(token))
        let afterVerified = transfers.startFetch(token)
        #expect(!afterVerified, "a verified result is never fetched again")
        _ = transfers.forget(token)
        #expect(transfers.isVerified(token), "a COMPLETE resent after the commit is a duplicate, not a new fetch")
    }

    @Test("an excerpt is cut once per attempt; an attempt's own file is deleted with it, a job's is only withdrawn")
    func excerpts() {
        var transfers = CoordinatorTransfers()
        let own = LeaseToken(UUID()), shared = LeaseToken(UUID())
        let cut = transfers.excerpt(for: own), resent = transfers.excerpt(for: own)
        #expect(cut.ready == nil && cut.startCut)
        #expect(resent.ready == nil && !resent.startCut, "a resent ASSIGN waits for the cut under way")
        let offer = Offer(file: CoordinatorTransfers.fileID("x", own), size: 10, checksum: SHA256Digest(bytes: [UInt8](repeating: 7, count: 32))!)
        transfers.excerptCut(own, offer: offer, path: "/spool/x-own.splseg", owned: true)
        let ready = transfers.excerpt(for: own)
        #expect(ready.ready?.offer == offer && ready.ready?.path == "/spool/x-own.splseg" && !ready.startCut)
        _ = transfers.excerpt(for: shared)
        transfers.excerptCut(shared, offer: offer, path: "/spool/x-s3.splseg", owned: false)
        let ownForgotten = transfers.forget(own), sharedForgotten = transfers.forget(shared)
        let twice = transfers.forget(own)
        #expect(ownForgotten.offered && ownForgotten.delete == "/spool/x-own.splseg")
        #expect(sharedForgotten.offered && sharedForgotten.delete == nil, "the job's file stays for its other attempts")
        #expect(!twice.offered && twice.delete == nil, "forgotten once")
    }

    @Test("a job whose source only the coordinator opens gets excerpts on every worker, until it ends")
    func excerptJobs() {
        var transfers = CoordinatorTransfers()
        let spoolWorker = WorkerIdentity.connection(RoutingID("w:spool"))
        transfers.hello(Hello(workerName: "t", slots: 1, encoders: [], storage: .transfer), from: worker)
        transfers.hello(Hello(workerName: "s", slots: 1, encoders: [], storage: .spool), from: spoolWorker)
        let stored = JobID(UUID()), onDisk = JobID(UUID())
        transfers.readThroughExcerpts([stored])
        #expect(transfers.needsExcerpt(stored, worker: spoolWorker), "a spool worker cannot open an object source")
        #expect(transfers.needsExcerpt(stored, worker: worker) && transfers.needsExcerpt(onDisk, worker: worker))
        #expect(!transfers.needsExcerpt(onDisk, worker: spoolWorker), "a spool worker reads a file source itself")
        transfers.jobEnded(stored)
        #expect(!transfers.needsExcerpt(stored, worker: spoolWorker))
    }
}
