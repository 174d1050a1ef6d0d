internal import Dispatch
internal import Foundation
internal import Glibc

/// The worker's view of the shared spool directory. Every file-system call here may block (the
/// spool is often NFS), so each runs on the spool's own Dispatch queue, never on Swift's
/// cooperative pool.
struct Spool: Sendable {
    let root: URL
    private static let queue = DispatchQueue(label: "splice.worker.spool")

    /// Checks that `root` is a directory this process can create files in, by creating and
    /// removing a probe file (on NFS, `access(2)` can say yes where a write is refused).
    static func open(_ root: URL) throws(WorkerError) -> Spool {
        let path = root.standardizedFileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw WorkerError(.spoolUnusable, "spool directory \(path) does not exist; create it (or mount the "
                              + "shared spool there) and pass it with --spool")
        }
        guard isDirectory.boolValue else {
            throw WorkerError(.spoolUnusable, "spool \(path) is not a directory; pass the shared spool directory with --spool")
        }
        let probe = root.appendingPathComponent(".splice-worker-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let fd = Glibc.open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw WorkerError(.spoolUnusable, "spool directory \(path) is not writable (\(reason)); give this user "
                              + "write access, or check the NFS export options")
        }
        close(fd)
        unlink(probe)
        return Spool(root: URL(fileURLWithPath: path, isDirectory: true))
    }

    /// Whether `path` is an absolute path strictly inside the spool, with no `..` escaping it.
    func contains(_ path: String) -> Bool {
        guard path.hasPrefix("/") else { return false }
        let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
        guard !standardized.split(separator: "/").contains("..") else { return false }
        let base = root.path.hasSuffix("/") ? root.path : root.path + "/"
        return standardized.hasPrefix(base) && standardized.count > base.count
    }

    /// Creates the directory that will hold `output` (the job's spool subdirectory) if missing.
    func prepareDirectory(for output: URL) async throws {
        try await Self.perform {
            try FileManager.default.createDirectory(at: output.deletingLastPathComponent(),
                                                    withIntermediateDirectories: true)
        }
    }

    /// Deletes `path` if it exists; returns whether a file was removed.
    @discardableResult
    func remove(_ path: String) async -> Bool {
        (try? await Self.perform { unlink(path) == 0 }) ?? false
    }

    private static func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
