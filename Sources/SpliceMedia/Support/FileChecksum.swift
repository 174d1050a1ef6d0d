public import Foundation
public import SpliceCore

/// The SHA-256 of a whole file, as the segment writer computes it while writing (FFmpeg's
/// `av_hash`): what a transfer checks a received file against before anyone uses it.
public enum FileChecksum {
    /// Reads `path` to the end on the calling thread (it blocks: call it off Swift's cooperative pool).
    public static func sha256(ofFileAt path: String) throws(MediaError) -> SHA256Digest {
        guard let file = fopen(path, "rb") else {
            throw MediaError(.fileNotFound, "cannot read '\(path)' to check it: \(String(cString: strerror(errno)))",
                             isRetryable: true)
        }
        defer { fclose(file) }
        let hash = ContentHash()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        if ferror(file) != 0 {
            throw MediaError(.fileNotFound, "cannot read '\(path)' to check it", isRetryable: true)
        }
        return hash.finalDigest()
    }
}

/// SHA-256 computed piece by piece, for bytes that arrive in order (a transfer's chunks), so the
/// file need not be read back to be checked.
public final class SHA256Stream: @unchecked Sendable {
    // Unchecked: one owner feeds it, each update finished before the next begins (a transfer awaits
    // every chunk's write, hash included, before it handles the next).
    private let hash = ContentHash()

    public init() {}

    public func update(_ bytes: Data) {
        bytes.withUnsafeBytes { hash.update($0) }
    }

    /// The digest of everything fed so far (call once).
    public func finish() -> SHA256Digest {
        hash.finalDigest()
    }
}
