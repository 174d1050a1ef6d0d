internal import Foundation
internal import Glibc
internal import SpliceCore
internal import SpliceLog
internal import SpliceWire
internal import Synchronization
import SpliceDaemon

/// A transfer-mode worker's side of the data endpoint: its scratch directory, emptied at start
/// and at exit, and a ``TransferPort`` on a DEALER to each coordinator's data endpoint (one per
/// coordinator it knows, in the same order) through which it fetches each ASSIGN's source excerpt
/// (`x-<lease token>`) from the coordinator that sent the ASSIGN, and offers its result
/// (`r-<lease token>`) for whichever coordinator commits it to fetch (after a take-over, the new
/// active one).
final class WorkerTransfer: Sendable {
    let scratch: URL
    private let ports: [TransferPort]
    private let endpoints: [DataEndpoint]
    /// A scratch directory this process made (removed at exit) rather than one it was given (emptied).
    private let ownScratch: ScratchDirectory?
    private let pumps: [Task<Void, Never>]
    /// `--scratch-limit`, and the bytes each running attempt has reserved against it.
    private let limit: Int64?
    private let reserved = Mutex<[LeaseToken: Int64]>([:])

    private init(scratch: URL, ownScratch: ScratchDirectory?, endpoints: [DataEndpoint], ports: [TransferPort],
                 limit: Int64?) {
        self.limit = limit
        self.scratch = scratch
        self.ownScratch = ownScratch
        self.endpoints = endpoints
        self.ports = ports
        pumps = ports.map { port in Task.detached { await port.run() } }
    }

    /// Prepares the scratch directory and connects to every coordinator's data endpoint.
    static func start(_ configuration: WorkerConfiguration, context: WireContext, logger: Logger) async throws
        -> WorkerTransfer
    {
        let (scratch, owned) = try prepareScratch(configuration.scratch, logger: logger)
        var endpoints: [DataEndpoint] = []
        do {
            for (index, address) in configuration.effectiveDataEndpoints.enumerated() {
                endpoints.append(DataEndpoint(try await WireEndpoint.connect(
                    address, type: .dealer, context: context, options: configuration.wireOptions(coordinator: index))))
            }
            return WorkerTransfer(scratch: scratch, ownScratch: owned, endpoints: endpoints,
                                  ports: endpoints.map { TransferPort(endpoint: $0, logger: logger) },
                                  limit: configuration.scratchLimit)
        } catch {
            for endpoint in endpoints { await endpoint.close(linger: .zero) }
            if let owned { owned.remove() } else { empty(scratch) }
            throw error
        }
    }

    /// The port on coordinator `index`'s data endpoint (the one whose ASSIGN names the excerpt).
    func port(_ index: Int) -> TransferPort {
        ports[min(max(0, index), ports.count - 1)]
    }

    /// Offers a result on every coordinator's data endpoint: the one that commits it fetches it.
    func offer(_ file: TransferFileID, path: String) async {
        for port in ports { await port.offer(file, path: path) }
    }

    /// `x-<token>` (the excerpt) or `r-<token>` (the result), the file's id on the data endpoint.
    static func fileID(_ kind: Character, _ token: LeaseToken) -> TransferFileID {
        TransferFileID("\(kind)-\(token)")!
    }

    func path(of file: TransferFileID) -> URL {
        scratch.appendingPathComponent(file.rawValue)
    }

    /// Reserves `bytes` of scratch for `token`'s excerpt (and the result that replaces it); nil
    /// when they fit under the limit, else why not.
    func reserve(_ bytes: Int64, for token: LeaseToken) -> String? {
        guard let limit else { return nil }
        return reserved.withLock { reserved in
            let held = reserved.values.reduce(0, +) - (reserved[token] ?? 0)
            guard held + bytes <= limit else {
                return "the source excerpt is \(bytes) bytes and scratch holds \(held) of its \(limit) "
                    + "(--scratch-limit); it would not fit"
            }
            reserved[token] = bytes
            return nil
        }
    }

    /// Withdraws a result offered for `token`, deletes whatever of the attempt is in scratch and
    /// releases its reservation.
    func discard(_ token: LeaseToken) async {
        _ = reserved.withLock { $0.removeValue(forKey: token) }
        for kind in ["x", "r"] as [Character] {
            let file = Self.fileID(kind, token)
            for port in ports { await port.withdraw(file) }
            unlink(path(of: file).path)
        }
    }

    /// Closes the endpoint and empties (or removes) the scratch directory.
    func close() async {
        for pump in pumps { pump.cancel() }
        for endpoint in endpoints { await endpoint.close(linger: .zero) }
        if let ownScratch { ownScratch.remove() } else { Self.empty(scratch) }
    }

    private static func prepareScratch(_ given: URL?, logger: Logger) throws(WorkerError) -> (URL, ScratchDirectory?) {
        guard let given else {
            let (made, removed) = try ScratchDirectory.make()
            if !removed.isEmpty {
                logger.info("removed scratch directories that workers killed earlier left behind",
                            ["removed": removed.count, "folder": NSTemporaryDirectory()])
            }
            return (made.url, made)
        }
        let root = given.standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        } catch {
            throw WorkerError(.spoolUnusable, "cannot create the scratch directory \(root.path): \(error)")
        }
        guard access(root.path, W_OK) == 0 else {
            throw WorkerError(.spoolUnusable, "the scratch directory \(root.path) is not writable")
        }
        empty(root)
        return (root, nil)
    }

    /// Removes everything in a scratch directory the worker was given.
    private static func empty(_ directory: URL) {
        let manager = FileManager.default
        for name in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
            try? manager.removeItem(at: directory.appendingPathComponent(name))
        }
    }
}
