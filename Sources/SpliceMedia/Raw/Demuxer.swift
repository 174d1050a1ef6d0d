internal import CFFmpeg
internal import CFFmpegShims
import Foundation

/// Owns an input `AVFormatContext` (opened in init, closed in deinit). Confined to one thread.
final class Demuxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The location as the user gave it, for messages.
    let location: String

    /// Opens `location` (a path or any URL libavformat understands) and reads stream info.
    init(location: String) throws(MediaError) {
        FFmpeg.clearLastLog()
        self.location = location
        let isURL = location.contains("://")
        if !isURL {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory) {
                throw MediaError(.fileNotFound, "cannot open '\(location)': no such file; check the path")
            }
            if isDirectory.boolValue {
                throw MediaError(.fileNotFound, "cannot open '\(location)': it is a directory, not a media file")
            }
            if !FileManager.default.isReadableFile(atPath: location) {
                throw MediaError(.fileNotFound, "cannot open '\(location)': permission denied")
            }
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        // On failure avformat_open_input frees the context itself and sets ctx to NULL.
        let ret = avformat_open_input(&ctx, location, nil, nil)
        guard ret >= 0, let opened = ctx else {
            if ret == splice_AVERROR(ENOENT) {
                throw MediaError(.fileNotFound, "cannot open '\(location)': no such file; check the path",
                                 ffmpegCode: ret)
            }
            let code: MediaError.Code = ret == splice_AVERROR_INVALIDDATA() ? .invalidMedia
                : (isURL ? .fileNotFound : .invalidMedia)
            throw FFmpeg.error(code, "cannot open '\(location)'", ret,
                               hint: isURL ? "check the URL and that the server is reachable"
                                           : "is it a complete, uncorrupted media file?")
        }
        context = opened
        let info = avformat_find_stream_info(opened, nil)
        if info < 0 {
            // deinit closes the context.
            throw FFmpeg.error(.invalidMedia, "cannot read stream information from '\(location)'", info,
                               hint: "the file may be truncated or corrupt")
        }
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&ctx)
    }

    var streamCount: Int { Int(context.pointee.nb_streams) }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> {
        context.pointee.streams[index]!
    }

    /// The index of FFmpeg's preferred stream of `type`, or nil.
    func bestStream(_ type: AVMediaType, related: Int32 = -1) -> Int? {
        let index = av_find_best_stream(context, type, -1, related, nil, 0)
        return index >= 0 ? Int(index) : nil
    }

    /// Tells the demuxer to skip every stream not in `keep` (saves reading and parsing them).
    func discardAll(except keep: Set<Int>) {
        for i in 0..<streamCount where !keep.contains(i) {
            stream(i).pointee.discard = AVDISCARD_ALL
        }
    }

    /// Reads the next packet into `packet`. Returns false at the end of the input.
    func read(into packet: Packet) throws(MediaError) -> Bool {
        packet.unref()
        let ret = av_read_frame(context, packet.pointer)
        if ret == FFmpeg.eof { return false }
        if ret < 0 {
            throw FFmpeg.error(.invalidMedia, "cannot read '\(location)'", ret,
                               hint: "the file may be truncated or corrupt")
        }
        return true
    }

    /// Seeks so that reading resumes at the last keyframe of `streamIndex` at or before `timestamp`
    /// (in that stream's time base).
    func seek(stream streamIndex: Int, to timestamp: Int64) throws(MediaError) {
        let ret = av_seek_frame(context, Int32(streamIndex), timestamp, AVSEEK_FLAG_BACKWARD)
        if ret < 0 {
            throw FFmpeg.error(.invalidMedia, "cannot seek in '\(location)'", ret)
        }
    }
}

extension Demuxer {
    /// Asset time zero in the source's clock: the earliest start of its audio and video tracks
    /// (``Asset/origin``; the stitcher reads copied tracks in the same terms).
    var origin: MediaTime {
        var starts: [MediaTime] = []
        for i in 0..<streamCount {
            let st = stream(i)
            let type = st.pointee.codecpar.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO else { continue }
            if st.pointee.start_time != FFmpeg.noPTS && st.pointee.time_base.num > 0 {
                starts.append(MediaTime(value: st.pointee.start_time, timeBase: Rational(st.pointee.time_base)))
            }
        }
        return starts.min() ?? .zero
    }
}
