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
