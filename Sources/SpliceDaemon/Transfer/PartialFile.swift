internal import Dispatch
internal import Foundation
internal import Glibc
package import SpliceCore

/// A file being received: written beside its destination under a temporary name, moved into
/// place by ``commit()`` once complete and verified; released uncommitted, it is removed, so a
/// half file never sits at the destination.
final class PartialFile: @unchecked Sendable {
    // Unchecked: one transfer owns it and awaits each write before the next, so its state
    // (`committed`, the offsets) is only ever touched by one task at a time; the running hash is
    // fed on the serial `hashing` queue only, in write order, and read after the group is done.
    let destination: String
    let temporaryPath: String
    private let fd: Int32
    private var committed = false
    /// The hash of bytes `[0, hashedUpTo)`, while they have arrived in order; nil once they have not.
    private var stream: SHA256Stream? = SHA256Stream()
    private var hashedUpTo: Int64 = 0
    /// Hashing runs on a queue of its own, beside the writes and the network (it costs as much as
    /// the rest of a transfer); at most `hashBacklog` chunks wait for it, which bounds the memory
    /// they hold, and ``commit(size:checksum:)`` waits for the last.
    private let hashing = DispatchQueue(label: "splice.transfer.hash")
    private let hashSlots = DispatchSemaphore(value: PartialFile.hashBacklog)
    private let hashed = DispatchGroup()
    static let hashBacklog = 16

    private init(destination: String, temporaryPath: String, fd: Int32) {
        self.destination = destination
        self.temporaryPath = temporaryPath
        self.fd = fd
    }

    deinit {
        close(fd)
        if !committed { unlink(temporaryPath) }
    }

    static func create(destination: URL) async throws(TransferError) -> PartialFile {
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).\(UInt32.random(in: 0...UInt32.max)).partial").path
        let fd = (try? await TransferFiles.perform { () -> Int32 in
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            return fd >= 0 ? fd : -errno
        }) ?? -EIO
        guard fd >= 0 else {
            throw TransferError.writing(temporary, errno: -fd)
        }
        return PartialFile(destination: destination.path, temporaryPath: temporary, fd: fd)
    }

    /// Writes `bytes` at `offset`; when the bytes before them have all been hashed (chunks that
    /// arrive in order, the usual case), hashes them too, so ``commit(size:checksum:)`` need not
    /// read the file back.
    func write(_ bytes: Data, at offset: Int64) async throws(TransferError) {
        let fd = self.fd
        let stream = offset == hashedUpTo ? self.stream : nil
        if stream == nil { self.stream = nil }  // out of order: the file is hashed whole at the end
        let (hashing, slots, hashed) = (self.hashing, hashSlots, self.hashed)
        let failure = (try? await TransferFiles.perform { () -> Int32 in
            if let stream {
                slots.wait()  // on a Dispatch thread: the backlog is full, the hash is behind
                hashing.async(group: hashed) {
                    stream.update(bytes)
                    slots.signal()
                }
            }
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return n < 0 ? errno : EIO }
                done += n
            }
            return 0
        }) ?? EIO
        if failure != 0 { throw TransferError.writing(temporaryPath, errno: failure) }
        if stream != nil { hashedUpTo += Int64(bytes.count) }
    }

    /// Flushes to disk, checks the size and the SHA-256, and renames into place; throws (and
    /// leaves nothing behind) when either differs.
    func commit(size: Int64, checksum: SHA256Digest) async throws(TransferError) {
        let fd = self.fd, temporary = temporaryPath
        let flushed = (try? await TransferFiles.perform { () -> Int64 in
            guard fsync(fd) == 0 else { return -Int64(errno) }
            var status = stat()
            return fstat(fd, &status) == 0 ? Int64(status.st_size) : -Int64(errno)
        }) ?? -Int64(EIO)
        guard flushed >= 0 else { throw TransferError.writing(temporary, errno: Int32(-flushed)) }
        guard flushed == size else {
            throw TransferError(.sizeMismatch, "received \(flushed) bytes for \(destination), expected \(size); "
                                + "the transfer is retried", isRetryable: true)
        }
        let actual: SHA256Digest
        do {
            if let stream, hashedUpTo == size {
                let hashed = self.hashed
                await withCheckedContinuation { done in hashed.notify(queue: .global()) { done.resume() } }
                actual = stream.finish()
            } else {
                actual = try await TransferFiles.checksum(temporary)
            }
        } catch {
            throw TransferError(.writeFailed, "cannot read back \(temporary): \(error)", isRetryable: true)
        }
        guard actual == checksum else {
            throw TransferError(.checksumMismatch, "the file received for \(destination) has SHA-256 \(actual), the sender "
                                + "said \(checksum): a chunk was damaged on the way; the transfer is retried",
                                isRetryable: true)
        }
        let destination = self.destination
        let renamed = (try? await TransferFiles.perform { rename(temporary, destination) == 0 ? 0 : errno }) ?? EIO
        guard renamed == 0 else { throw TransferError.writing(destination, errno: renamed) }
        committed = true
    }
}
