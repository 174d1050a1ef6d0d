import Foundation
import Glibc
import SpliceTestSupport
import Testing
@testable import SpliceWorker

/// A transfer worker's own scratch directory: locked while its worker runs, found and removed by
/// the next worker once its worker is gone however it ended, never while it runs.
@Suite("Scratch directories")
struct ScratchDirectoryTests {
    /// A directory under `root` as a worker leaves it: `.owner` (locked through the returned
    /// descriptor when `held`) and a half-fetched excerpt.
    func leftBehind(_ name: String, in root: URL, held: Bool, owner: Bool = true) throws -> Int32? {
        let dir = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(repeating: 7, count: 4096).write(to: dir.appendingPathComponent("x-lease"))
        guard owner else { return nil }
        let fd = open(dir.appendingPathComponent(".owner").path, O_RDWR | O_CREAT, 0o600)
        #expect(fd >= 0)
        guard held else { close(fd); return nil }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd
    }

    @Test("a new worker removes what killed workers left, keeps a running worker's and anything it did not make")
    func abandonedAreRemoved() throws {
        let root = Fixtures.temporaryDirectory("scratch-root")
        _ = try leftBehind("splice-scratch-killed1", in: root, held: false)
        _ = try leftBehind("splice-scratch-killed2", in: root, held: false)
        let running = try #require(try leftBehind("splice-scratch-running", in: root, held: true))
        defer { close(running) }
        _ = try leftBehind("splice-scratch-older", in: root, held: false, owner: false)
        _ = try leftBehind("someone-else", in: root, held: false)

        let (made, removed) = try ScratchDirectory.make(in: root.path)
        #expect(removed == ["splice-scratch-killed1", "splice-scratch-killed2"])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: root.path))
        #expect(left == ["splice-scratch-running", "splice-scratch-older", "someone-else", made.url.lastPathComponent])
        #expect(made.url.lastPathComponent.hasPrefix("splice-scratch-"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: made.url.path) == [".owner"])

        // Its own is locked while it lives: another worker's sweep leaves it.
        #expect(ScratchDirectory.removeAbandoned(in: root.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: made.url.path))
        made.remove()
        #expect(!FileManager.default.fileExists(atPath: made.url.path))
    }

    @Test("once the worker that made it is gone, its directory is the next worker's to remove")
    func goneWorkersDirectoryIsRemoved() throws {
        let root = Fixtures.temporaryDirectory("scratch-gone")
        var name = ""
        do {
            let (made, _) = try ScratchDirectory.make(in: root.path)
            name = made.url.lastPathComponent
            try Data(repeating: 1, count: 100).write(to: made.url.appendingPathComponent("r-lease"))
            withExtendedLifetime(made) {
                #expect(ScratchDirectory.removeAbandoned(in: root.path).isEmpty)
            }
        }
        // Freed without removing (as a killed process drops its locks): abandoned now.
        #expect(ScratchDirectory.removeAbandoned(in: root.path) == [name])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).isEmpty)
    }

    @Test("a root it cannot write to is a clear error that says what to do")
    func unwritableRoot() {
        #expect {
            _ = try ScratchDirectory.make(in: "/nonexistent/folder")
        } throws: { error in
            guard let e = error as? WorkerError else { return false }
            return e.code == .spoolUnusable && "\(e)".contains("/nonexistent/folder") && "\(e)".contains("--scratch")
        }
    }
}
