internal import CFFmpeg
internal import CFFmpegShims
import Foundation

/// Owns an input `AVFormatContext` (opened in init, closed in deinit). Confined to one thread.
///
/// A demuxer either reads a container through libavformat or replays a source excerpt
/// (``SourceExcerpt``): then the context only describes the source's streams (no input format)
/// and packets come from the excerpt's segment file, exactly as the source's demuxer returned them.
/// A location in storage (`s3://…`, ``StorageRegistry``) is read through a custom `AVIOContext`
/// over the storage's byte source.
final class Demuxer {
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The location as the user gave it, for messages.
    let location: String
    /// Set when replaying a source excerpt: its path and the reader at the current position.
    private var excerpt: (path: String, reader: SegmentFileReader)?
    /// Set when reading from storage: the context's `pb` (freed after the context is closed).
    private let storage: StorageIO?

    /// Opens `location` (a path, a storage location, or any URL libavformat understands) and
    /// reads stream info.
    init(location: String) throws(MediaError) {
        FFmpeg.clearLastLog()
        self.location = location
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        if let store = try StorageRegistry.storage(for: location) {
            let io = StorageIO(reading: try store.openSource(location))
            storage = io
            guard let allocated = avformat_alloc_context() else { fatalError("avformat_alloc_context: out of memory") }
            allocated.pointee.pb = io.context
            allocated.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            ctx = allocated
        } else {
            storage = nil
        }
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
        // A web source may only open web resources (an HLS playlist naming file: or concat: is
        // refused), whatever FFmpeg's nested demuxers would otherwise follow.
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        let lowered = location.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            av_dict_set(&options, "protocol_whitelist", "http,https,tcp,tls,crypto", 0)
        }
        // On failure avformat_open_input frees the context itself (not a custom pb) and sets ctx to NULL.
        let ret = avformat_open_input(&ctx, location, nil, &options)
        guard ret >= 0, let opened = ctx else {
            if let failure = storage?.failure { throw failure }
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
            if let failure = storage?.failure { throw failure }
            throw FFmpeg.error(.invalidMedia, "cannot read stream information from '\(location)'", info,
                               hint: "the file may be truncated or corrupt")
        }
    }

    /// Replays the source excerpt at `path`: the streams of the source it was cut
    /// from, with their codec parameters, time bases and start times, and its packets.
    init(excerpt path: String) throws(MediaError) {
        let reader = try SegmentFileReader(path: path, verifying: false)
        guard let origin = reader.header.source else {
            throw MediaError(.invalidMedia, "'\(path)' is a segment file but not a source excerpt")
        }
        location = origin.asset.location
        storage = nil
        guard let ctx = avformat_alloc_context() else { fatalError("avformat_alloc_context: out of memory") }
        context = ctx
        excerpt = (reader.path, reader)
        guard origin.streams.count == reader.header.streams.count else {
            throw SegmentFileReader.corrupt(reader.path, "its stream descriptions do not match its streams")
        }
        for (parameters, extra) in zip(reader.header.streams, origin.streams) {
            // The stream belongs to the context from here on (freed with it in deinit).
            guard let st = avformat_new_stream(ctx, nil) else { fatalError("avformat_new_stream: out of memory") }
            if parameters.codecName == "none" {
                // A stream no codec reads (QuickTime data tracks): only its kind matters, and it is never read.
                st.pointee.codecpar.pointee.codec_type = parameters.mediaType == "data" ? AVMEDIA_TYPE_DATA : AVMEDIA_TYPE_UNKNOWN
            } else {
                try parameters.apply(to: st.pointee.codecpar)
            }
            st.pointee.codecpar.pointee.codec_tag = extra.codecTag
            st.pointee.time_base = parameters.timeBase.av
            st.pointee.start_time = extra.startTime ?? FFmpeg.noPTS
            st.pointee.duration = extra.duration ?? FFmpeg.noPTS
            st.pointee.avg_frame_rate = extra.averageFrameRate.av
            st.pointee.r_frame_rate = extra.realFrameRate.av
            st.pointee.disposition = extra.disposition
        }
    }

    deinit {
        if excerpt != nil {
            avformat_free_context(context)
        } else {
            var ctx: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&ctx)
        }
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
        if let excerpt {
            while let index = try excerpt.reader.next(into: packet) {
                if stream(index).pointee.discard != AVDISCARD_ALL { return true }
            }
            return false
        }
        let ret = av_read_frame(context, packet.pointer)
        if let failure = storage?.failure { throw failure }
        if ret == FFmpeg.eof { return false }
        if ret < 0 {
            throw FFmpeg.error(.invalidMedia, "cannot read '\(location)'", ret,
                               hint: "the file may be truncated or corrupt")
        }
        return true
    }

    /// Seeks so that reading resumes at the last keyframe of `streamIndex` at or before `timestamp`
    /// (in that stream's time base).
    ///
    /// An excerpt starts where the seek on its source landed, so seeking in one goes back to its start.
    func seek(stream streamIndex: Int, to timestamp: Int64) throws(MediaError) {
        if excerpt != nil { return try rewindExcerpt() }
        let ret = av_seek_frame(context, Int32(streamIndex), timestamp, AVSEEK_FLAG_BACKWARD)
        if let failure = storage?.failure { throw failure }
        if ret < 0 {
            throw FFmpeg.error(.invalidMedia, "cannot seek in '\(location)'", ret)
        }
    }

    /// Goes back to the start of the input (best effort: a container that cannot seek stays put).
    func rewind() throws(MediaError) {
        if excerpt != nil { return try rewindExcerpt() }
        let start = context.pointee.start_time == FFmpeg.noPTS ? 0 : context.pointee.start_time
        if avformat_seek_file(context, -1, Int64.min, start, start, 0) < 0 {
            _ = avformat_seek_file(context, -1, Int64.min, 0, 0, AVSEEK_FLAG_BYTE)
        }
    }

    private func rewindExcerpt() throws(MediaError) {
        guard let path = excerpt?.path else { return }
        excerpt = (path, try SegmentFileReader(path: path, verifying: false))
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
