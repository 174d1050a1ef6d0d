import CFFmpeg
import CFFmpegShims
import Foundation
import SpliceObjectStore

/// The two ways FFmpeg can read an object, measured by demuxing every packet in this process:
/// a custom `AVIOContext` whose read and seek callbacks go to an ``ObjectReader`` (ranged GETs
/// over libcurl with read-ahead), and FFmpeg's own http reader given a presigned URL.
/// Blocking: call from a thread of its own.
enum DemuxThroughput {
    struct Result {
        var packets: Int
        var bytes: Int64
        var seconds: Double
    }

    /// Every packet of the object `reader` reads, through a custom AVIOContext.
    static func demux(reader: ObjectReader, bufferBytes: Int = 1 << 20) throws -> Result {
        let source = Source(reader: reader)
        let opaque = Unmanaged.passRetained(source).toOpaque()
        defer { Unmanaged<Source>.fromOpaque(opaque).release() }
        guard let buffer = av_malloc(bufferBytes) else { throw S3BenchError("av_malloc failed") }
        // The AVIOContext owns `buffer` from here (it may replace it); freed through `avio.buffer` below.
        guard let avio = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Int32(bufferBytes), 0, opaque,
                                            readPacket, nil, seek) as UnsafeMutablePointer<AVIOContext>? else {
            av_free(buffer)
            throw S3BenchError("avio_alloc_context failed")
        }
        defer {
            av_freep(&avio.pointee.buffer)
            var context: UnsafeMutablePointer<AVIOContext>? = avio
            avio_context_free(&context)
        }
        guard let allocated = avformat_alloc_context() else { throw S3BenchError("avformat_alloc_context failed") }
        allocated.pointee.pb = avio
        allocated.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        var format: UnsafeMutablePointer<AVFormatContext>? = allocated
        return try readAll(&format, url: nil)
    }

    /// Every packet of the object at `url` (a presigned URL), through FFmpeg's http reader.
    static func demux(url: String) throws -> Result {
        avformat_network_init()
        var format: UnsafeMutablePointer<AVFormatContext>? = nil
        return try readAll(&format, url: url)
    }

    /// Opens `format` (allocated with a custom pb, or nil to open `url`) and reads every packet.
    private static func readAll(_ format: inout UnsafeMutablePointer<AVFormatContext>?, url: String?) throws -> Result {
        let start = DispatchTime.now().uptimeNanoseconds
        // On failure avformat_open_input frees the context (not a custom pb) and sets it to NULL.
        guard avformat_open_input(&format, url, nil, nil) >= 0, let opened = format else {
            throw S3BenchError("avformat_open_input failed for \(url.map { _ in "the presigned URL" } ?? "the object")")
        }
        defer { avformat_close_input(&format) }
        guard avformat_find_stream_info(opened, nil) >= 0 else { throw S3BenchError("avformat_find_stream_info failed") }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        var count = 0
        var bytes: Int64 = 0
        while av_read_frame(opened, packet) >= 0 {
            count += 1
            bytes += Int64(packet!.pointee.size)
            av_packet_unref(packet)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Result(packets: count, bytes: bytes, seconds: seconds)
    }

    /// The reader and the position FFmpeg's callbacks move.
    private final class Source {
        let reader: ObjectReader
        var position: Int64 = 0
        init(reader: ObjectReader) { self.reader = reader }
    }

    private static let readPacket: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
        opaque, buffer, size in
        let source = Unmanaged<Source>.fromOpaque(opaque!).takeUnretainedValue()
        guard let buffer, size > 0 else { return 0 }
        do {
            let count = try source.reader.readBlocking(at: source.position,
                                                       into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size)))
            guard count > 0 else { return splice_AVERROR_EOF() }
            source.position += Int64(count)
            return Int32(count)
        } catch {
            return splice_AVERROR(EIO)
        }
    }

    private static let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let source = Unmanaged<Source>.fromOpaque(opaque!).takeUnretainedValue()
        switch whence & ~AVSEEK_FORCE {
        case AVSEEK_SIZE: return source.reader.size
        case SEEK_SET: source.position = offset
        case SEEK_CUR: source.position += offset
        case SEEK_END: source.position = source.reader.size + offset
        default: return -1
        }
        return source.position
    }
}
