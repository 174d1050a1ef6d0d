internal import Foundation
internal import Glibc
internal import SpliceCore
internal import SpliceLog
internal import SpliceWire
internal import Synchronization
import SpliceDaemon

/// A transfer-mode worker's side of the data endpoint: its scratch directory, emptied at start
/// and at exit, and the ``TransferPort`` on a DEALER to the coordinator's data endpoint through
/// which it fetches each ASSIGN's source excerpt (`x-<lease token>`) and offers its result
/// (`r-<lease token>`) for the coordinator to fetch.
final class WorkerTransfer: Sendable {
    let scratch: URL
    let port: TransferPort
    private let endpoint: DataEndpoint
    /// A scratch directory this process made (removed at exit) rather than one it was given (emptied).
    private let ownsScratch: Bool
    private let pump: Task<Void, Never>
    /// `--scratch-limit`, and the bytes each running attempt has reserved against it.
    private let limit: Int64?
    private let reserved = Mutex<[LeaseToken: Int64]>([:])

    private init(scratch: URL, ownsScratch: Bool, endpoint: DataEndpoint, port: TransferPort, limit: Int64?) {
        self.limit = limit
        self.scratch = scratch
        self.ownsScratch = ownsScratch
        self.endpoint = endpoint
        self.port = port
        pump = Task.detached { await port.run() }
    }

    /// Prepares the scratch directory and connects to the data endpoint.
    static func start(_ configuration: WorkerConfiguration, context: WireContext, logger: Logger) async throws
        -> WorkerTransfer
    {
        let (scratch, owned) = try prepareScratch(configuration.scratch)
        do {
            let endpoint = DataEndpoint(try await WireEndpoint.connect(
                configuration.effectiveDataEndpoint, type: .dealer, context: context, options: configuration.wireOptions))
            return WorkerTransfer(scratch: scratch, ownsScratch: owned, endpoint: endpoint,
                                  port: TransferPort(endpoint: endpoint, logger: logger), limit: configuration.scratchLimit)
        } catch {
            empty(scratch, remove: owned)
            throw error
        }
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
            await port.withdraw(file)
            unlink(path(of: file).path)
        }
    }

    /// Closes the endpoint and empties (or removes) the scratch directory.
    func close() async {
        pump.cancel()
        await endpoint.close(linger: .zero)
        Self.empty(scratch, remove: ownsScratch)
    }

    private static func prepareScratch(_ given: URL?) throws(WorkerError) -> (URL, owned: Bool) {
        guard let given else {
            var template = Array((NSTemporaryDirectory() + "/splice-scratch-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw WorkerError(.spoolUnusable, "cannot create a scratch directory under \(NSTemporaryDirectory()): "
                                  + String(cString: strerror(errno)) + "; pass one with --scratch")
            }
            return (URL(fileURLWithPath: String(cString: made), isDirectory: true), true)
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
        empty(root, remove: false)
        return (root, false)
    }

    private static func empty(_ directory: URL, remove: Bool) {
        let manager = FileManager.default
        if remove {
            try? manager.removeItem(at: directory)
            return
        }
        for name in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
            try? manager.removeItem(at: directory.appendingPathComponent(name))
        }
    }
}
