internal import Foundation
internal import Glibc

/// A transfer worker's own scratch directory under the temporary folder (`splice-scratch-XXXXXX`),
/// when it was given none: made at start, removed at exit — and, since a worker that is killed
/// (SIGKILL, the OOM killer, a power cut) removes nothing, found and removed by the next worker that
/// starts on the machine.
///
/// Each directory holds an `.owner` file its worker keeps locked (`flock`) for as long as it runs;
/// the kernel drops the lock when the process ends, however it ends. A starting worker removes
/// every `splice-scratch-*` whose lock it can take: no process holds it, so nothing will ever use
/// what is inside (half-fetched excerpts, results never collected — up to a segment's size each).
/// Directories without an `.owner` (made by an older release, or by a worker between creating the
/// directory and locking it) are left alone; so is any other worker's, whose lock is held.
final class ScratchDirectory: Sendable {
    static let prefix = "splice-scratch-"
    static let ownerFile = ".owner"

    let url: URL
    /// The open, locked `.owner`: closed, and so unlocked, when this is freed.
    private let lock: Int32

    private init(url: URL, lock: Int32) {
        self.url = url
        self.lock = lock
    }

    deinit { Glibc.close(lock) }

    /// Removes the abandoned scratch directories under `root`, then makes and locks a new one.
    /// Returns the new directory and the names of the ones removed.
    static func make(in root: String = NSTemporaryDirectory()) throws(WorkerError) -> (ScratchDirectory, removed: [String]) {
        let removed = removeAbandoned(in: root)
        var template = Array((root + "/" + prefix + "XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw WorkerError(.spoolUnusable, "cannot create a scratch directory under \(root): "
                              + String(cString: strerror(errno)) + "; pass one with --scratch")
        }
        let path = String(cString: made)
        // Locked under another name, then renamed: another worker's sweep never sees an `.owner`
        // that is not yet locked.
        let fd = open(path + "/.owner-new", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0, rename(path + "/.owner-new", path + "/" + ownerFile) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            try? FileManager.default.removeItem(atPath: path)
            throw WorkerError(.spoolUnusable, "cannot lock the scratch directory \(path): \(reason); pass one with --scratch")
        }
        return (ScratchDirectory(url: URL(fileURLWithPath: path, isDirectory: true), lock: fd), removed)
    }

    /// Removes every `splice-scratch-*` directory under `root` whose `.owner` no process holds.
    static func removeAbandoned(in root: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        var removed: [String] = []
        for name in names.sorted() where name.hasPrefix(prefix) {
            let path = root + "/" + name
            let fd = open(path + "/" + ownerFile, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            // Held: its worker runs. Taken: its worker is gone; remove it while holding the lock.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed.append(name) }
        }
        return removed
    }

    /// Removes the directory and drops the lock.
    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
