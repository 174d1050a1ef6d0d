import Foundation
import SpliceCore
import SpliceLog
import SpliceWire

/// The coordinator's side of transfer mode (workers started without `--spool`): which sessions
/// said HELLO `storage: transfer`, the source excerpt cut for each of their ASSIGNs and offered to
/// their key alone on the data endpoint (`x-<lease token>`), and the results fetched back from
/// them (`r-<lease token>`) into the attempt's spool path. The shell lets a transfer worker's
/// COMPLETE reach the state machine only once its result is verified there; until then it drops
/// it (the worker resends it), so the machine and the store never see an unverified result. The
/// COMPLETE that started the fetch is handed on as soon as the result is verified.
///
/// State only; the shell carries out the I/O (the cut in a `splice media-task` child, fetches on
/// the ``TransferPort``) and reports back here.
struct CoordinatorTransfers: Sendable {
    enum Excerpt: Sendable {
        /// Being cut: a resent ASSIGN waits for it.
        case cutting
        case ready(Offer, path: String)
    }

    /// Sessions in transfer mode.
    private(set) var workers: Set<WorkerIdentity> = []
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

    func isVerified(_ token: LeaseToken) -> Bool { verified.contains(token) }

    /// The excerpt of `token` if ready; otherwise starts the cut (true) or says one is under way.
    mutating func excerpt(for token: LeaseToken) -> (ready: Offer?, startCut: Bool) {
        switch excerpts[token] {
        case .ready(let offer, _)?: return (offer, false)
        case .cutting?: return (nil, false)
        case nil:
            excerpts[token] = .cutting
            return (nil, true)
        }
    }

    mutating func excerptCut(_ token: LeaseToken, offer: Offer, path: String) {
        excerpts[token] = .ready(offer, path: path)
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

    /// Forgets `token`'s excerpt (its result committed, or its lease gone); the path to delete.
    mutating func forget(_ token: LeaseToken) -> String? {
        defer { excerpts[token] = nil }
        if case .ready(_, let path)? = excerpts[token] { return path }
        return nil
    }
}
