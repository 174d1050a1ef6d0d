internal import Dispatch
internal import Foundation
internal import Glibc
package import SpliceCore

/// The file-system side of transfers. Every call may block (a slow disk, NFS), so each runs on
/// a Dispatch queue of its own, never on Swift's cooperative pool.
package enum TransferFiles {
    private static let queue = DispatchQueue(label: "splice.transfer.files", attributes: .concurrent)

    static func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Up to `length` bytes of `path` from `offset`, and the file's size; a reason when it cannot
    /// be read (gone, unreadable) — what a MISSING says.
    static func read(_ path: String, offset: Int64, length: Int) async -> Result<(bytes: Data, size: Int64), TransferReadFailure> {
        (try? await perform { () -> Result<(bytes: Data, size: Int64), TransferReadFailure> in
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return .failure(TransferReadFailure(reason: "cannot open it: \(String(cString: strerror(errno)))")) }
            defer { close(fd) }
            var status = stat()
            guard fstat(fd, &status) == 0 else { return .failure(TransferReadFailure(reason: "cannot stat it")) }
            let size = Int64(status.st_size)
            let count = Int(max(0, min(Int64(length), size - offset)))
            var bytes = Data(count: count)
            var done = 0
            while done < count {
                let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return .failure(TransferReadFailure(reason: "it ends before the size it had")) }
                done += n
            }
            return .success((bytes, size))
        }) ?? .failure(TransferReadFailure(reason: "cannot read it"))
    }

    /// The SHA-256 of the whole file at `path`.
    package static func checksum(_ path: String) async throws -> SHA256Digest {
        try await perform { try FileChecksum.sha256(ofFileAt: path) }
    }
}

/// Why a file offered for transfer could not be read.
struct TransferReadFailure: Error, Sendable {
    var reason: String
}

