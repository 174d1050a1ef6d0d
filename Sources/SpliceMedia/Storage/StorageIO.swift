internal import CFFmpeg
internal import CFFmpegShims
import Foundation

/// A custom `AVIOContext` over a ``MediaByteSource`` (reading: read and seek callbacks) or a
/// ``MediaByteSink`` (writing: write and seek callbacks, seekable so that muxers fill in their
/// headers at the end). Owns the context and its buffer, frees them in `deinit`; the format
/// context that uses it must be closed first (``Demuxer`` and ``Muxer`` do, in their `deinit`).
///
/// FFmpeg only sees `EIO` when storage fails; the storage's own error is kept in ``failure`` so
/// the demuxer or muxer can report it instead of "I/O error". Confined to the thread that drives
/// the format context.
final class StorageIO {
    /// The context to set as a format context's `pb`.
    let context: UnsafeMutablePointer<AVIOContext>
    /// The first error storage reported, for messages.
    private(set) var failure: MediaError?
    private let source: (any MediaByteSource)?
    private let sink: (any MediaByteSink)?
    /// Where the next read or write goes.
    private var position: Int64 = 0

    /// The read buffer: large, because each read is a call into the storage client.
    static let bufferBytes = 1 << 20

    /// Reads `source`.
    init(reading source: any MediaByteSource) {
        self.source = source
        sink = nil
        context = Self.allocate(writing: false)
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Writes `sink`.
    init(writing sink: any MediaByteSink) {
        self.sink = sink
        source = nil
        context = Self.allocate(writing: true)
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        // Muxers seek back to patch what they wrote (MP4's mdat size): say it can be done.
        context.pointee.seekable = AVIO_SEEKABLE_NORMAL
    }

    deinit {
        // The context may have replaced its buffer: free the one it holds now.
        av_freep(&context.pointee.buffer)
        var pointer: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&pointer)
    }

    /// Writes what the context still buffers; throws the storage's error (or FFmpeg's).
    func flush() throws(MediaError) {
        avio_flush(context)
        if let failure { throw failure }
        if context.pointee.error < 0 {
            throw FFmpeg.error(.writeFailed, "cannot write the output", context.pointee.error)
        }
    }

    private static func allocate(writing: Bool) -> UnsafeMutablePointer<AVIOContext> {
        guard let buffer = av_malloc(bufferBytes),
              let context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Int32(bufferBytes),
                                               writing ? 1 : 0, nil, writing ? nil : readPacket,
                                               writing ? writePacket : nil, seek)
        else { fatalError("avio_alloc_context: out of memory") }
        return context
    }

    private static func io(_ opaque: UnsafeMutableRawPointer?) -> StorageIO {
        Unmanaged<StorageIO>.fromOpaque(opaque!).takeUnretainedValue()
    }

    private static let readPacket: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32)
        -> Int32 = { opaque, buffer, size in
        let io = io(opaque)
        guard let buffer, size > 0, let source = io.source else { return splice_AVERROR(EINVAL) }
        do throws(MediaError) {
            let count = try source.read(at: io.position, into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)))
            guard count > 0 else { return splice_AVERROR_EOF() }
            io.position += Int64(count)
            return Int32(count)
        } catch {
            if io.failure == nil { io.failure = error }
            return splice_AVERROR(EIO)
        }
    }

    private static let writePacket: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32)
        -> Int32 = { opaque, buffer, size in
        let io = io(opaque)
        guard let buffer, size >= 0, let sink = io.sink else { return splice_AVERROR(EINVAL) }
        if io.failure != nil { return splice_AVERROR(EIO) }
        let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(buffer), count: Int(size))
        do throws(MediaError) {
            // Over what was written (a header filled in), then past its end (appended).
            let written = sink.bytesWritten
            let over = io.position < written ? Int(min(Int64(size), written - io.position)) : 0
            if over > 0 { try sink.patch(at: io.position, UnsafeRawBufferPointer(rebasing: bytes[..<over])) }
            if over < Int(size) {
                guard io.position + Int64(over) == written else {
                    throw MediaError(.internalError, "the muxer wrote at byte \(io.position), past the \(written) bytes "
                                     + "written so far; this output cannot go to storage directly")
                }
                try sink.append(UnsafeRawBufferPointer(rebasing: bytes[over...]))
            }
            io.position += Int64(size)
            return size
        } catch {
            io.failure = error
            return splice_AVERROR(EIO)
        }
    }

    private static let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let io = io(opaque)
        let size = io.source?.size ?? io.sink?.bytesWritten ?? 0
        switch whence & ~AVSEEK_FORCE {
        case AVSEEK_SIZE: return size
        case SEEK_SET: io.position = offset
        case SEEK_CUR: io.position += offset
        case SEEK_END: io.position = size + offset
        default: return Int64(splice_AVERROR(EINVAL))
        }
        return io.position
    }
}
