internal import CFFmpeg

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

    /// The digest as lowercase hex ("sha256:" is not prefixed).
    func finalHex() -> String {
        var buffer = [UInt8](repeating: 0, count: 2 * 64 + 1)
        buffer.withUnsafeMutableBufferPointer { av_hash_final_hex(context, $0.baseAddress, Int32($0.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}
