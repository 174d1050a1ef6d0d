import Foundation
import Glibc
import SpliceCore
import SpliceLog
import SpliceMedia
import SpliceWire
import SpliceDaemon

/// Transfer mode in the shell (``CoordinatorTransfers`` holds the state): ASSIGNs to transfer
/// workers go out once their excerpt is cut and offered; their COMPLETEs reach the state machine
/// once the result is fetched and verified at its spool path.
extension CoordinatorShell {
    /// The message to hand the state machine, or nil to drop it: a transfer worker's COMPLETE whose
    /// result is not verified yet (its fetch is started, and the worker resends the COMPLETE), and
    /// a transfer worker's HELLO when there is no data endpoint to serve it (it is never welcomed,
    /// so it gets no work it could only fail).
    func screenTransfer(_ message: WorkerMessage, from peer: WirePeer) -> WorkerMessage? {
        guard let worker = WorkerIdentity(peer: peer) else { return message }
        switch message {
        case .hello(var hello):
            guard hello.storage != .transfer || transferPort != nil else {
                if let suppressed = dropLog.admit("transfer-without-data-endpoint") {
                    logger.warning("transfer-mode worker not served: no data endpoint", [
                        "worker": worker.description, "name": hello.workerName, "suppressed": suppressed,
                        "hint": "start the worker with --spool, or give the coordinator a --data-endpoint",
                    ])
                }
                return nil
            }
            transfers.hello(hello, from: worker)
            guard hello.storage == .transfer else { return message }
            hello.finished = hello.finished.filter { complete in
                if transfers.isVerified(complete.attempt.leaseToken) { return true }
                fetchResult(complete, from: peer)
                return false
            }
            return .hello(hello)
        case .complete(let complete) where transfers.isTransferWorker(worker):
            if transfers.isVerified(complete.attempt.leaseToken) { return message }
            fetchResult(complete, from: peer)
            return nil
        default:
            return message
        }
    }

    /// Sends `assign` with its excerpt, cutting the excerpt first (in a media-task child) when it
    /// is not cut yet; a resent ASSIGN while the cut runs is dropped (the cut's end sends it). A
    /// transfer worker gets the excerpt offered on the data endpoint; a shared-spool worker (for a
    /// job whose source only the coordinator opens) gets its path in the spool.
    func sendWithExcerpt(_ assign: Assign, to peer: WirePeer, worker: WorkerIdentity) {
        let token = assign.attempt.leaseToken
        let viaPort = transfers.isTransferWorker(worker)
        let (ready, startCut) = transfers.excerpt(for: token)
        if let ready {
            var assign = assign
            if viaPort { assign.excerpt = ready.offer } else { assign.excerptPath = ready.path }
            outbox.enqueue(.assign(assign), to: peer, worker: worker, version: protocolVersion(of: worker))
            return
        }
        guard startCut else { return }
        let port = viaPort ? transferPort : nil
        if viaPort && port == nil {
            spawn {
                await self.excerptFailed(assign, reason: "this coordinator has no data endpoint (--data-endpoint)",
                                         retryable: true)
            }
            return
        }
        let (written, startBatch) = transfers.jobExcerpt(assign.attempt.job, segment: assign.attempt.segment)
        if let written {
            // Cut with the rest of its job: offered under this attempt's name, kept for the job.
            let offer = Offer(file: CoordinatorTransfers.fileID("x", token), size: written.bytes, checksum: written.checksum)
            spawn {
                await port?.offer(offer.file, path: written.path, to: peer.publicKey)
                await self.excerptReady(assign, offer: offer, path: written.path, owned: false, to: peer, worker: worker)
            }
            return
        }
        if startBatch { spawn { await self.cutJobExcerpts(assign) } }
        spawn { await self.cutExcerpt(assign, port: port, to: peer, worker: worker) }
    }

    /// Notes the jobs among `assignments` whose source only the coordinator opens (every worker
    /// reads them through excerpts), before their ASSIGNs go out.
    nonisolated func noteExcerptJobs(_ assignments: [Assignment]) async {
        var jobs: Set<JobID> = []
        for job in Set(assignments.map(\.attempt.job)) where await store.sourceIsStored(job: job) { jobs.insert(job) }
        if !jobs.isEmpty { await readThroughExcerpts(jobs) }
    }

    private func readThroughExcerpts(_ jobs: Set<JobID>) {
        transfers.readThroughExcerpts(jobs)
    }

    /// Cuts every segment's excerpt of `assign`'s job in one `splice media-task` child, so that
    /// the job's next ASSIGNs to transfer workers go out at once instead of after a child each.
    private nonisolated func cutJobExcerpts(_ assign: Assign) async {
        let job = assign.attempt.job
        var written: [Int: SourceExcerpt.Written]?
        if let plan = try? await store.workerPlan(job: job) {
            let directory = URL(fileURLWithPath: assign.outputPath).deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let clock = ContinuousClock()
                let started = clock.now
                written = try await media.excerpts(plan: plan, segments: plan.segments.map(\.index),
                                                   directory: directory.path)
                logger.info("source excerpts cut", ["job": job.description, "segments": written?.count ?? 0,
                                                    "bytes": written?.values.reduce(0) { $0 + $1.bytes } ?? 0,
                                                    "ms": (clock.now - started).wholeMilliseconds])
            } catch {
                logger.warning("source excerpts not cut for the whole job; cut one by one", [
                    "job": job.description, "reason": "\(error)",
                ])
            }
        }
        await jobExcerptsCut(job, written)
    }

    private func jobExcerptsCut(_ job: JobID, _ written: [Int: SourceExcerpt.Written]?) {
        transfers.jobExcerptsCut(job, written)
    }

    private nonisolated func cutExcerpt(_ assign: Assign, port: TransferPort?, to peer: WirePeer,
                                        worker: WorkerIdentity) async {
        let token = assign.attempt.leaseToken
        let order: SegmentWorkOrder
        do {
            order = try assign.spec.decode(SegmentWorkOrder.self)
        } catch {
            await excerptFailed(assign, reason: "the work order cannot be read: \(error)", retryable: true)
            return
        }
        let file = CoordinatorTransfers.fileID("x", token)
        let directory = URL(fileURLWithPath: assign.outputPath).deletingLastPathComponent()
        let path = directory.appendingPathComponent(file.rawValue + ".splseg").path
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let written = try await media.excerpt(plan: order.plan, segment: order.segment, output: path)
            let offer = Offer(file: file, size: written.bytes, checksum: written.checksum)
            await port?.offer(file, path: path, to: peer.publicKey)
            logger.info("source excerpt ready", [
                "job": assign.attempt.job.description, "segment": assign.attempt.segment,
                "attempt": assign.attempt.attempt, "worker": worker.description, "bytes": written.bytes,
            ])
            await excerptReady(assign, offer: offer, path: path, owned: true, to: peer, worker: worker)
        } catch {
            unlink(path)
            // A source that is gone or unreadable as media stays so: the job fails now, not after
            // every attempt's backoff. An I/O error (EIO, a full spool) may pass: retried. So may
            // a source deleted once the job's batch cut (or is cutting) this segment's excerpt:
            // the next attempt takes the excerpt from the batch.
            let retryable = (error as? MediaError)?.isRetryable ?? true
            let fromBatch = await batchMayHold(assign.attempt)
            await excerptFailed(assign, reason: "cannot cut the source excerpt: \(error)", retryable: retryable || fromBatch)
        }
    }

    private func batchMayHold(_ attempt: SegmentAttempt) -> Bool {
        transfers.batchMayHold(attempt.job, segment: attempt.segment)
    }

    private func excerptReady(_ assign: Assign, offer: Offer, path: String, owned: Bool, to peer: WirePeer,
                              worker: WorkerIdentity) {
        transfers.excerptCut(assign.attempt.leaseToken, offer: offer, path: path, owned: owned)
        sendWithExcerpt(assign, to: peer, worker: worker)
    }

    /// The attempt fails, spending it: the source is what failed (gone, unreadable); when that
    /// cannot pass (not `retryable`), the segment and its job fail at once.
    private func excerptFailed(_ assign: Assign, reason: String, retryable: Bool) async {
        let attempt = assign.attempt
        logger.warning("source excerpt not cut", ["job": attempt.job.description, "segment": attempt.segment,
                                                  "attempt": attempt.attempt, "reason": reason, "retryable": retryable])
        _ = transfers.forget(attempt.leaseToken)
        spawn { await self.abandon(attempt, reason: reason, spendsAttempt: true, retryable: retryable) }
    }

    /// Fetches a transfer worker's result into the attempt's spool path (temporary name, size and
    /// SHA-256 checked, then renamed), unless a fetch is under way or done.
    private func fetchResult(_ complete: Complete, from peer: WirePeer) {
        let attempt = complete.attempt
        guard let port = transferPort, transfers.startFetch(attempt.leaseToken) else { return }
        // The path is the coordinator's own choice for this attempt, never the worker's word.
        let expected = spool.layout.segmentPath(job: attempt.job, segment: attempt.segment, attempt: attempt.attempt,
                                                leaseToken: attempt.leaseToken)
        guard complete.outputPath == expected else {
            logger.warning("COMPLETE names another output path than the attempt's; not fetched", [
                "job": attempt.job.description, "segment": attempt.segment, "path": complete.outputPath,
            ])
            transfers.fetchEnded(attempt.leaseToken, verified: false)
            return
        }
        spawn {
            let ok = await self.fetch(complete, path: expected, port: port, from: peer)
            await self.fetchEnded(attempt.leaseToken, verified: ok)
            if ok { await self.redeliver(.complete(complete), from: peer) }
        }
    }

    private nonisolated func fetch(_ complete: Complete, path: String, port: TransferPort, from peer: WirePeer) async
        -> Bool
    {
        let attempt = complete.attempt
        let destination = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(),
                                                    withIntermediateDirectories: true)
            // Already here and whole (fetched before a restart, say): nothing to move.
            if FileManager.default.fileExists(atPath: path) {
                return try await TransferFiles.checksum(path) == complete.checksum
            }
            _ = try await port.fetch(CoordinatorTransfers.fileID("r", attempt.leaseToken), size: complete.sizeBytes,
                                     checksum: complete.checksum, from: peer, to: destination)
            return true
        } catch {
            logger.warning("segment result not fetched; the worker's next COMPLETE asks again", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "error": "\(error)",
            ])
            return false
        }
    }

    private func fetchEnded(_ token: LeaseToken, verified: Bool) {
        transfers.fetchEnded(token, verified: verified)
    }

    /// How `worker`'s session reaches media, and for a transfer worker the bytes it fetched from
    /// the data endpoint and had fetched from it (for `splice workers`).
    func storage(of worker: WorkerIdentity) async -> (storage: WorkerStorage, bytesIn: Int64?, bytesOut: Int64?) {
        guard transfers.isTransferWorker(worker) else { return (.spool, nil, nil) }
        let bytes = await transferPort?.bytes(of: worker) ?? (received: 0, sent: 0)
        return (.transfer, bytes.sent, bytes.received)
    }

    /// Drops what transfer mode holds for `token`: the excerpt's offer and file.
    func forgetTransfer(_ token: LeaseToken) {
        let (offered, path) = transfers.forget(token)
        guard offered else { return }
        let port = transferPort
        Task {
            await port?.withdraw(CoordinatorTransfers.fileID("x", token))
            if let path { unlink(path) }
        }
    }
}
