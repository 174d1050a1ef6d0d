public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs mounted on a fresh folder: a spool or a worker's scratch that really runs out of
/// space. Unmounted by ``unmount()`` or, failing that, when the test process exits (lazily, so a
/// process still holding a file in it cannot keep it mounted). Mounting needs root (CAP_SYS_ADMIN).
public final class TmpfsMount: Sendable {
    public let path: URL

    private init(path: URL) {
        self.path = path
    }

    /// Whether this process may mount a tmpfs at all (tried once, on a scratch folder).
    public static let isAvailable: Bool = {
        guard let probe = try? TmpfsMount.mount(bytes: 1 << 20) else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `bytes` on a fresh folder under the test scratch directory.
    public static func mount(bytes: Int) throws -> TmpfsMount {
        let folder = Fixtures.temporaryDirectory("tmpfs")
        let status = Glibc.mount("tmpfs", folder.path, "tmpfs", 0, "size=\(bytes),mode=0777")
        guard status == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: folder)
            throw TestFailure("cannot mount a tmpfs on \(folder.path): \(reason)")
        }
        _ = unmountAtExit
        mounted.withLock { $0.append(folder.path) }
        return TmpfsMount(path: folder)
    }

    /// Free bytes, as statvfs says.
    public var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(path.path, &stats) == 0 else { return 0 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Fills the file system with a ballast file until `leaving` bytes are free (within a block).
    public func fill(leaving: Int) throws {
        let ballast = path.appendingPathComponent("ballast")
        let size = freeBytes - leaving
        guard size > 0 else { return }
        guard FileManager.default.createFile(atPath: ballast.path, contents: Data(count: size)) else {
            throw TestFailure("cannot write a \(size)-byte ballast into \(path.path)")
        }
    }

    /// Removes the ballast: the file system has room again.
    public func empty() throws {
        try FileManager.default.removeItem(at: path.appendingPathComponent("ballast"))
    }

    /// Unmounts (lazily: a worker may still hold a file open) and removes the folder.
    public func unmount() {
        if umount2(path.path, Int32(MNT_DETACH)) == 0 {
            Self.mounted.withLock { $0.removeAll { $0 == path.path } }
        }
        try? FileManager.default.removeItem(at: path)
    }

    private static let mounted = Mutex<[String]>([])
    private static let unmountAtExit: Void = {
        atexit {
            for path in TmpfsMount.mounted.withLock({ $0 }) { umount2(path, Int32(MNT_DETACH)) }
        }
    }()
}
