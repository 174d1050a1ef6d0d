internal import CFFmpeg
internal import SpliceCore

/// Owns an FFmpeg `AVHashContext` computing SHA-256 incrementally (freed in deinit).
final class ContentHash {
    private var context: OpaquePointer?

    init() {
        guard av_hash_alloc(&context, "SHA256") >= 0, context != nil else { fatalError("av_hash_alloc: out of memory") }
        av_hash_init(context)
    }

    deinit { av_hash_freep(&context) }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        av_hash_update(context, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// The digest of everything hashed so far.
    func finalDigest() -> SHA256Digest {
        var buffer = [UInt8](repeating: 0, count: Int(av_hash_get_size(context)))
        buffer.withUnsafeMutableBufferPointer { av_hash_final(context, $0.baseAddress) }
        guard let digest = SHA256Digest(bytes: buffer) else { fatalError("av_hash SHA256 gave \(buffer.count) bytes") }
        return digest
    }
}
