internal import Glibc
public import SpliceCore

/// Why a file transfer failed: a stable `code`, a message naming the file, and whether trying
/// again can help (all of them but `invalid-chunk`, which a sane peer never causes, and
/// `no-space`, which the same machine will hit again).
public typealias TransferError = CodedError<TransferErrorCode>

/// The stable codes of ``TransferError``.
public enum TransferErrorCode: String, Sendable, Hashable {
    /// No chunk arrived for the stall timeout, several times over (the peer or the network is gone).
    case stalled
    /// The sender does not offer the file, or can no longer read it.
    case missing
    /// The received file's size is not the one announced.
    case sizeMismatch = "size-mismatch"
    /// The received file's SHA-256 is not the one announced: a damaged chunk.
    case checksumMismatch = "checksum-mismatch"
    /// A CHUNK from the peer being fetched from that the transfer never asked for.
    case invalidChunk = "invalid-chunk"
    /// The file could not be written where it goes.
    case writeFailed = "write-failed"
    /// The disk (the worker's scratch, the coordinator's spool) is full.
    case noSpace = "no-space"
    /// The same file is already being fetched.
    case busy
    /// The transfer's task was cancelled.
    case cancelled
}

extension CodedError where Code == TransferErrorCode {
    /// A failed write of `path`: `no-space` for ENOSPC/EDQUOT, otherwise `write-failed` (retryable).
    static func writing(_ path: String, errno code: Int32) -> TransferError {
        let reason = String(cString: strerror(code))
        if code == ENOSPC || code == EDQUOT {
            return TransferError(.noSpace, "cannot write \(path): \(reason); free space or give it a larger disk")
        }
        return TransferError(.writeFailed, "cannot write \(path): \(reason)", isRetryable: true)
    }
}
