internal import CFFmpeg
import Foundation

/// Converts text subtitle packets from one format to another: FFmpeg decodes any text format
/// to styled ASS events and its text encoders take those back (`mov_text`, `subrip`, `webvtt`,
/// `ass`). Owns both codec contexts. Confined to one thread.
final class SubtitleConverter {
    let decoder: CodecContext
    let encoder: CodecContext
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    init(stream: UnsafeMutablePointer<AVStream>, location: String, targetCodec: String,
         pictureSize: (width: Int, height: Int)?) throws(MediaError) {
        decoder = try CodecContext.decoder(for: stream, location: location, threads: 1)
        encoder = try CodecContext.encoder(named: targetCodec)
        let ctx = encoder.pointer
        ctx.pointee.time_base = AVRational(num: 1, den: 1000)
        if let pictureSize {
            ctx.pointee.width = Int32(pictureSize.width)
            ctx.pointee.height = Int32(pictureSize.height)
        }
        // Text encoders read styles from the ASS header the decoder made.
        let header = decoder.pointer.pointee.subtitle_header
        let size = Int(decoder.pointer.pointee.subtitle_header_size)
        if let header, size > 0, let copy = av_mallocz(size + 1) {
            copy.copyMemory(from: header, byteCount: size)
            ctx.pointee.subtitle_header = copy.assumingMemoryBound(to: UInt8.self)
            ctx.pointee.subtitle_header_size = Int32(size)
        }
        try encoder.open(options: [:])
    }

    /// The packet's text in the target format; nil when the packet holds no text (an empty cue
    /// that only clears the screen).
    func convert(_ packet: Packet) throws(MediaError) -> Data? {
        var subtitle = AVSubtitle()
        var got: Int32 = 0
        let ret = avcodec_decode_subtitle2(decoder.pointer, &subtitle, &got, packet.pointer)
        if ret < 0 { throw FFmpeg.error(.decodeFailed, "the \(decoder.role) failed", ret, hint: "the subtitle track may be damaged") }
        guard got != 0 else { return nil }
        defer { avsubtitle_free(&subtitle) }
        guard subtitle.num_rects > 0 else { return nil }
        // The encoders want the display span from 0; the packet carries the real timing.
        subtitle.end_display_time = subtitle.end_display_time &- subtitle.start_display_time
        subtitle.start_display_time = 0
        let n = buffer.withUnsafeMutableBufferPointer { out in
            avcodec_encode_subtitle(encoder.pointer, out.baseAddress, Int32(out.count), &subtitle)
        }
        if n < 0 { throw FFmpeg.error(.encodeFailed, "the \(encoder.role) failed", n) }
        return n > 0 ? Data(buffer[0..<Int(n)]) : nil
    }
}
