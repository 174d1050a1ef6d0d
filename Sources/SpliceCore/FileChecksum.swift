public import Foundation

/// Why a file could not be hashed.
public enum FileChecksumErrorCode: String, Sendable, Hashable {
    /// It is missing or unreadable.
    case unreadable = "file-unreadable"
}

/// The error of ``FileChecksum``: the file and why it could not be read (a retry may help: NFS).
public typealias FileChecksumError = CodedError<FileChecksumErrorCode>

/// The SHA-256 of a whole file, as the segment writer computes it while writing: what a transfer
/// checks a received file against before anyone uses it.
public enum FileChecksum {
    /// Reads `path` to the end on the calling thread (it blocks: call it off Swift's cooperative pool).
    public static func sha256(ofFileAt path: String) throws(FileChecksumError) -> SHA256Digest {
        guard let file = fopen(path, "rb") else {
            throw FileChecksumError(.unreadable, "cannot read '\(path)' to check it: \(String(cString: strerror(errno)))",
                                    isRetryable: true)
        }
        defer { fclose(file) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        if ferror(file) != 0 {
            throw FileChecksumError(.unreadable, "cannot read '\(path)' to check it", isRetryable: true)
        }
        return hasher.finalDigest()
    }
}

extension SHA256 {
    /// The digest of everything added, as the typed digest the protocol and the store carry.
    public consuming func finalDigest() -> SHA256Digest {
        // 32 bytes always make a digest.
        SHA256Digest(bytes: finalize())!
    }

    /// Adds `bytes` (a received chunk) to what is hashed.
    public mutating func update(_ bytes: Data) {
        bytes.withUnsafeBytes { update($0) }
    }
}

/// SHA-256 computed piece by piece for bytes that arrive in order (a transfer's chunks), shared by
/// reference with the queue that feeds it, so the file need not be read back to be checked.
public final class SHA256Stream: @unchecked Sendable {
    // Unchecked: one owner feeds it, each update finished before the next begins (a transfer feeds
    // it on one serial queue and reads it after that queue is done).
    private var hasher = SHA256()

    public init() {}

    public func update(_ bytes: Data) {
        hasher.update(bytes)
    }

    /// The digest of everything fed so far (call once).
    public func finish() -> SHA256Digest {
        hasher.finalDigest()
    }
}
