import Foundation
import SpliceCore
import SpliceMedia
import SpliceLog
import SpliceWire
import SpliceDaemon

/// The coordinator's side of transfer mode (workers started without `--spool`): which sessions
/// said HELLO `storage: transfer`, the source excerpt cut for each of their ASSIGNs and offered to
/// their key alone on the data endpoint (`x-<lease token>`), and the results fetched back from
/// them (`r-<lease token>`) into the attempt's spool path. The shell lets a transfer worker's
/// COMPLETE reach the state machine only once its result is verified there; until then it drops
/// it (the worker resends it), so the machine and the store never see an unverified result. The
/// COMPLETE that started the fetch is handed on as soon as the result is verified.
///
/// Jobs whose source only the coordinator may open (an object in storage: the workers never get
/// its credentials) are read through excerpts by every worker: shared-spool workers get the
/// excerpt's path in the spool (ASSIGN `excerptPath`) instead of an offer.
///
/// State only; the shell carries out the I/O (the cut in a `splice media-task` child, fetches on
/// the ``TransferPort``) and reports back here.
struct CoordinatorTransfers: Sendable {
    enum Excerpt: Sendable {
        /// Being cut: a resent ASSIGN waits for it.
        case cutting
        /// `owned`: cut for this attempt alone (deleted when it ends), else one of its job's.
        case ready(Offer, path: String, owned: Bool)
    }

    /// A job's excerpts cut in one go, the first time one of its segments goes to a transfer worker.
    enum JobExcerpts: Sendable {
        case cutting
        case ready([Int: SourceExcerpt.Written])
        case failed
    }
    /// The latest `jobCapacity` jobs' batches (a job that finished is not always announced here:
    /// the stitcher removes its files itself; one evicted while running is cut again).
    private var jobs: [JobID: JobExcerpts] = [:]
    private var jobOrder: [JobID] = []
    static let jobCapacity = 256

    /// Sessions in transfer mode.
    private(set) var workers: Set<WorkerIdentity> = []
    /// Jobs every worker reads through excerpts (the latest `jobCapacity`; one forgotten while it
    /// runs is learnt again from its next claim).
    private var excerptJobs: Set<JobID> = []
    private var excerptJobOrder: [JobID] = []
    private var excerpts: [LeaseToken: Excerpt] = [:]
    /// Results fetched and verified at their spool path (the latest `verifiedCapacity`, so that a
    /// COMPLETE resent after its commit is a duplicate, not a new fetch), and fetches under way.
    private var verified: Set<LeaseToken> = []
    private var verifiedOrder: [LeaseToken] = []
    static let verifiedCapacity = 16_384
    private var fetching: Set<LeaseToken> = []

    /// `x-<token>` or `r-<token>`.
    static func fileID(_ kind: Character, _ token: LeaseToken) -> TransferFileID {
        TransferFileID("\(kind)-\(token)")!
    }

    mutating func hello(_ hello: Hello, from worker: WorkerIdentity) {
        if hello.storage == .transfer { workers.insert(worker) } else { workers.remove(worker) }
    }

    func isTransferWorker(_ worker: WorkerIdentity) -> Bool { workers.contains(worker) }

    /// Whether an ASSIGN of `job` to `worker` needs an excerpt: a transfer worker's always, any
    /// worker's for a job whose source only the coordinator opens.
    func needsExcerpt(_ job: JobID, worker: WorkerIdentity) -> Bool {
        workers.contains(worker) || excerptJobs.contains(job)
    }

    /// Every worker reads `jobs` through excerpts from now on.
    mutating func readThroughExcerpts(_ jobs: Set<JobID>) {
        for job in jobs where excerptJobs.insert(job).inserted {
            excerptJobOrder.append(job)
            if excerptJobOrder.count > Self.jobCapacity { excerptJobs.remove(excerptJobOrder.removeFirst()) }
        }
    }

    func isVerified(_ token: LeaseToken) -> Bool { verified.contains(token) }

    /// The excerpt of `token` (its offer and its path in the spool) if ready; otherwise starts the
    /// cut (true) or says one is under way.
    mutating func excerpt(for token: LeaseToken) -> (ready: (offer: Offer, path: String)?, startCut: Bool) {
        switch excerpts[token] {
        case .ready(let offer, let path, _)?: return ((offer, path), false)
        case .cutting?: return (nil, false)
        case nil:
            excerpts[token] = .cutting
            return (nil, true)
        }
    }

    mutating func excerptCut(_ token: LeaseToken, offer: Offer, path: String, owned: Bool) {
        excerpts[token] = .ready(offer, path: path, owned: owned)
    }

    /// `segment`'s excerpt from its job's batch, when cut; whether the batch should start now.
    mutating func jobExcerpt(_ job: JobID, segment: Int) -> (written: SourceExcerpt.Written?, startBatch: Bool) {
        switch jobs[job] {
        case .ready(let written)?: return (written[segment], false)
        case .cutting?, .failed?: return (nil, false)
        case nil:
            jobs[job] = .cutting
            jobOrder.append(job)
            if jobOrder.count > Self.jobCapacity { jobs[jobOrder.removeFirst()] = nil }
            return (nil, true)
        }
    }

    /// Whether the job's batch may still give `segment` its excerpt: it is being cut, or was cut
    /// with that segment (a single cut that failed for good is then not the last word).
    func batchMayHold(_ job: JobID, segment: Int) -> Bool {
        switch jobs[job] {
        case .cutting?: true
        case .ready(let written)?: written[segment] != nil
        case .failed?, nil: false
        }
    }

    mutating func jobExcerptsCut(_ job: JobID, _ written: [Int: SourceExcerpt.Written]?) {
        guard jobs[job] != nil else { return }  // the job ended meanwhile
        jobs[job] = written.map { .ready($0) } ?? .failed
    }

    mutating func jobEnded(_ job: JobID) {
        jobs[job] = nil
        jobOrder.removeAll { $0 == job }
        if excerptJobs.remove(job) != nil { excerptJobOrder.removeAll { $0 == job } }
    }

    /// Whether a fetch of `token`'s result should start now (none is under way, none verified).
    mutating func startFetch(_ token: LeaseToken) -> Bool {
        guard !verified.contains(token), !fetching.contains(token) else { return false }
        fetching.insert(token)
        return true
    }

    mutating func fetchEnded(_ token: LeaseToken, verified ok: Bool) {
        fetching.remove(token)
        guard ok, verified.insert(token).inserted else { return }
        verifiedOrder.append(token)
        if verifiedOrder.count > Self.verifiedCapacity {
            verified.remove(verifiedOrder.removeFirst())
        }
    }

    /// Forgets `token`'s excerpt (its result committed, or its lease gone): whether it was offered
    /// (to withdraw), and the file to delete when it was cut for this attempt alone.
    mutating func forget(_ token: LeaseToken) -> (offered: Bool, delete: String?) {
        defer { excerpts[token] = nil }
        guard case .ready(_, let path, let owned)? = excerpts[token] else { return (false, nil) }
        return (true, owned ? path : nil)
    }
}
