internal import CFFmpeg
internal import CFFmpegShims
import Foundation

/// Owns an output `AVFormatContext` and its file. Writes to a temporary file beside the
/// destination and moves it into place only in ``finish()``; if the muxer is released without
/// finishing (failure, cancel), the temporary file is removed, so nothing half-written remains.
///
/// A destination in storage (`s3://…`, ``StorageRegistry``) is written one of two ways: streamed
/// into the storage's ``MediaByteSink`` while the muxer writes (through a seekable custom
/// `AVIOContext`: the sink keeps its first part in memory, where muxers fill in their headers at
/// the end), or — when the file is rewritten after the muxer is done (`rewritesFile`: MP4
/// `faststart`, which FFmpeg does by reading the file back, and appended timed-metadata tracks) —
/// into a local staging file that ``finish()`` uploads. Either way the output appears only in
/// ``finish()``, and a muxer released unfinished leaves nothing behind (the sink is aborted).
///
/// Ownership: `context` is freed only in `deinit`. A class init that throws after every stored
/// property is set still runs `deinit`, so the init's failure paths must not free it too.
final class Muxer: PacketWriter {
    let context: UnsafeMutablePointer<AVFormatContext>
    let destination: String
    /// The local file FFmpeg writes (beside the destination, or in the staging folder for a
    /// destination in storage); nil when it streams into a sink.
    let temporaryPath: String?
    /// Whether ``finish()`` may replace a file that is already at `destination`.
    let replacing: Bool
    /// The storage the destination is in, when it is not a path.
    private let storage: (any MediaStorage)?
    /// Streaming into storage: the sink and the context's `pb` over it.
    private let sink: (any MediaByteSink)?
    private let io: StorageIO?
    private let cancellation: CancelFlag?
    private var headerWritten = false
    private var finished = false
    /// The output's size, once finished.
    private(set) var bytesWritten: Int64 = 0

    /// Opens a temporary file beside `destination` (or a sink in its storage) for the
    /// `formatName` muxer. `rewritesFile`: the finished file is changed afterwards (MP4
    /// `faststart`, appended tracks), so a storage destination is staged locally. Check the
    /// destination first (``OutputDestination/check(output:inputs:overwrite:)``); this only
    /// reports what FFmpeg (or the storage) says when it cannot create the output.
    ///
    /// `cancellation`: once it is set, ``finish()`` makes nothing appear — a sink is aborted at
    /// once, even while `finish()` waits for its last parts to go up, and a finished file is not
    /// moved into place nor uploaded.
    init(destination: String, formatName: String, replacing: Bool, rewritesFile: Bool = false,
         cancellation: CancelFlag? = nil) throws(MediaError) {
        FFmpeg.clearLastLog()
        self.destination = destination
        self.replacing = replacing
        self.cancellation = cancellation
        let store = try StorageRegistry.storage(for: destination)
        storage = store
        let directory: String
        if let store, !rewritesFile {
            let opened = try store.openSink(destination, overwrite: replacing)
            // Off the cancelling thread: an abort waits for the parts in flight to stop.
            cancellation?.whenSet { Thread { opened.abort() }.start() }
            sink = opened
            io = StorageIO(writing: opened)
            temporaryPath = nil
            directory = destination
        } else if store != nil {
            sink = nil
            io = nil
            let name = destination.split(separator: "/").last.map(String.init) ?? "output"
            directory = FileManager.default.temporaryDirectory.path
            temporaryPath = FileManager.default.temporaryDirectory
                .appendingPathComponent(".\(name).splice-\(UInt32.random(in: 0...UInt32.max)).tmp").path
        } else {
            sink = nil
            io = nil
            let url = URL(fileURLWithPath: destination)
            directory = url.deletingLastPathComponent().path
            temporaryPath = url.deletingLastPathComponent()
                .appendingPathComponent(".\(url.lastPathComponent).splice-\(UInt32.random(in: 0...UInt32.max)).tmp").path
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let ret = avformat_alloc_output_context2(&ctx, nil, formatName, temporaryPath ?? destination)
        guard ret >= 0, let ctx else {
            sink?.abort()
            throw FFmpeg.error(.writeFailed, "cannot create a '\(formatName)' writer for '\(destination)'", ret)
        }
        context = ctx
        // From here on every stored property is set: a throw runs deinit, which frees the context.
        if let io {
            ctx.pointee.pb = io.context
            ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            return
        }
        let open = avio_open(&ctx.pointee.pb, temporaryPath!, AVIO_FLAG_WRITE)
        if open < 0 {
            throw FFmpeg.error(.writeFailed, "cannot write '\(destination)' in '\(directory)'", open,
                               hint: "check that the folder exists, is writable and has free space")
        }
    }

    deinit {
        if io != nil {
            context.pointee.pb = nil  // the custom context is StorageIO's to free
        } else if context.pointee.pb != nil {
            avio_closep(&context.pointee.pb)
        }
        avformat_free_context(context)
        if !finished {
            sink?.abort()
            if let temporaryPath { unlink(temporaryPath) }
        }
    }

    /// The storage's own error when it is why FFmpeg failed, else FFmpeg's.
    private func failure(_ code: MediaError.Code, _ what: String, _ ret: Int32, hint: String? = nil) -> MediaError {
        io?.failure ?? FFmpeg.error(code, what, ret, hint: hint)
    }

    var formatName: String { FFmpeg.string(context.pointee.oformat.pointee.name) ?? "?" }

    /// Streams added so far.
    var streamCount: Int { Int(context.pointee.nb_streams) }

    /// Whether the container wants codec headers out of band (encoders must set GLOBAL_HEADER).
    var wantsGlobalHeader: Bool { context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// Adds a stream configured from an opened encoder.
    func addStream(encoder: CodecContext, frameRate: Rational?) throws(MediaError) -> Int {
        guard let st = avformat_new_stream(context, nil) else { fatalError("avformat_new_stream: out of memory") }
        let ret = avcodec_parameters_from_context(st.pointee.codecpar, encoder.pointer)
        if ret < 0 { throw FFmpeg.error(.writeFailed, "cannot add a stream to '\(destination)'", ret) }
        st.pointee.time_base = encoder.pointer.pointee.time_base
        // Matroska and WebM write the display size from the stream's pixel aspect ratio, not the
        // codec parameters' (which MP4's pasp and the codecs' own headers use).
        st.pointee.sample_aspect_ratio = st.pointee.codecpar.pointee.sample_aspect_ratio
        if let frameRate { st.pointee.avg_frame_rate = frameRate.av }
        return Int(st.pointee.index)
    }

    /// Adds a stream from codec parameters (pass-through, stitching).
    func addStream(parameters par: UnsafePointer<AVCodecParameters>, timeBase: AVRational) throws(MediaError) -> Int {
        Int(try addStream(copying: par, timeBase: timeBase).pointee.index)
    }

    /// Adds a stream for packets described by a segment file's codec parameters.
    func addStream(parameters params: CodecParameters) throws(MediaError) -> Int {
        guard let par = avcodec_parameters_alloc() else { throw MediaError(.internalError, "out of memory") }
        var owned: UnsafeMutablePointer<AVCodecParameters>? = par
        defer { avcodec_parameters_free(&owned) }
        try params.apply(to: par)
        let out = try addStream(parameters: par, timeBase: params.timeBase.av)
        if let rate = params.frameRate { context.pointee.streams[out]!.pointee.avg_frame_rate = rate.av }
        return out
    }

    /// Adds a stream that receives copied packets with the given parameters.
    func addStream(copying par: UnsafePointer<AVCodecParameters>, timeBase: AVRational) throws(MediaError)
        -> UnsafeMutablePointer<AVStream> {
        guard let st = avformat_new_stream(context, nil) else { fatalError("avformat_new_stream: out of memory") }
        let ret = avcodec_parameters_copy(st.pointee.codecpar, par)
        if ret < 0 { throw FFmpeg.error(.writeFailed, "cannot add a stream to '\(destination)'", ret) }
        st.pointee.codecpar.pointee.codec_tag = 0
        st.pointee.time_base = timeBase
        st.pointee.sample_aspect_ratio = par.pointee.sample_aspect_ratio
        return st
    }

    /// MP4/MOV muxer options: `faststart`, tags beyond the standard ones, and a movie timescale
    /// every track's clock divides — FFmpeg's default of 1000 rounds edit lists and track
    /// durations to the millisecond. Call after adding the streams.
    func quickTimeOptions(fastStart: Bool, customTags: Bool) -> [String: String] {
        var options: [String: String] = [:]
        var flags: [String] = []
        if fastStart { flags.append("+faststart") }
        if customTags { flags.append("+use_metadata_tags") }
        if !flags.isEmpty { options["movflags"] = flags.joined() }
        var scale: Int32?
        for i in 0..<Int(context.pointee.nb_streams) {
            let st = context.pointee.streams[i]!.pointee
            let clock = st.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO ? st.codecpar.pointee.sample_rate : st.time_base.den
            guard clock > 0 else { continue }
            scale = scale.map { MediaTime.commonTimescale($0, clock) } ?? clock
        }
        if let scale { options["movie_timescale"] = "\(scale)" }
        return options
    }

    /// Writes the container header with muxer options (e.g. `movflags`).
    func writeHeader(metadata: [String: String], options: [String: String]) throws(MediaError) {
        for (k, v) in metadata { av_dict_set(&context.pointee.metadata, k, v, 0) }
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }
        FFmpeg.clearLastLog()
        let ret = avformat_write_header(context, &dict)
        if ret < 0 {
            throw failure(.writeFailed, "cannot start writing '\(destination)'", ret,
                               hint: "the \(formatName) container may not hold these codecs")
        }
        headerWritten = true
    }

    /// Writes one packet with timestamps in `timeBase`, rescaled to the stream's time base (which
    /// the muxer may have changed in its header) — the one place output packets are retimed.
    func write(_ packet: Packet, stream: Int, timeBase: AVRational) throws(MediaError) {
        let st = context.pointee.streams[stream]!
        packet.streamIndex = Int32(stream)
        packet.rescale(from: timeBase, to: st.pointee.time_base)
        packet.pointer.pointee.pos = -1
        let ret = av_interleaved_write_frame(context, packet.pointer)
        if ret < 0 {
            let diskTrouble = ret == splice_AVERROR(ENOSPC) || ret == splice_AVERROR(EIO) || ret == splice_AVERROR(EDQUOT)
            if let failure = io?.failure { throw failure }
            throw FFmpeg.error(diskTrouble ? .writeFailed : .internalError, "cannot write to '\(destination)'", ret,
                               hint: diskTrouble ? "check free disk space" : nil)
        }
    }

    /// Ends the current fragment of a fragmented MP4 (`movflags frag_custom`): everything queued
    /// for interleaving is written, then the fragment (`moof` + `mdat`) is cut.
    func flushFragment() throws(MediaError) {
        var ret = av_interleaved_write_frame(context, nil)
        if ret >= 0 { ret = av_write_frame(context, nil) }
        if ret < 0 { throw failure(.writeFailed, "cannot write to '\(destination)'", ret, hint: "check free disk space") }
    }

    /// The time base of output stream `index` (the muxer may change it when writing the header).
    func timeBase(of index: Int) -> AVRational { context.pointee.streams[index]!.pointee.time_base }

    /// Writes the trailer, closes the file and moves it to the destination (without replacing a
    /// file there unless `replacing`).
    func finish() throws(MediaError) {
        try finish(appending: nil, isQuickTimeMovie: false, fastStart: false)
    }

    /// ``finish()``, first adding timed-metadata tracks FFmpeg cannot write to a QuickTime/MP4
    /// file (`appending` non-nil, even empty: the muxer was told not to move its index first, so
    /// `fastStart` does it here).
    func finish(appending tracks: [TimedMetadataTrack]?, isQuickTimeMovie: Bool, fastStart: Bool) throws(MediaError) {
        precondition(headerWritten, "finish() before writeHeader()")
        FFmpeg.clearLastLog()
        let ret = av_write_trailer(context)
        if ret < 0 { throw failure(.writeFailed, "cannot finish '\(destination)'", ret, hint: "check free disk space") }
        if let sink, let io {
            guard tracks == nil else {
                throw MediaError(.internalError, "'\(destination)' streams into storage but needs rewriting afterwards")
            }
            try io.flush()
            try checkCancellation()
            try sink.finish()
            bytesWritten = sink.bytesWritten
            finished = true
            return
        }
        let temporaryPath = self.temporaryPath!
        let closed = avio_closep(&context.pointee.pb)
        if closed < 0 { throw FFmpeg.error(.writeFailed, "cannot close '\(destination)'", closed, hint: "check free disk space") }
        if let tracks {
            try QuickTimeTrackAppender.append(tracks, to: temporaryPath, isQuickTimeMovie: isQuickTimeMovie, fastStart: fastStart)
        }
        var info = stat()
        bytesWritten = stat(temporaryPath, &info) == 0 ? Int64(info.st_size) : 0
        try checkCancellation()
        if let storage {
            try storage.upload(files: [(temporaryPath, destination)], overwrite: replacing, cancellation: cancellation)
            unlink(temporaryPath)
        } else {
            try OutputDestination.moveIntoPlace(temporaryPath, to: destination, replacing: replacing)
        }
        finished = true
    }

    /// Throws `cancelled` once the muxer's cancellation is set (deinit then drops the output).
    private func checkCancellation() throws(MediaError) {
        if cancellation?.isSet == true { throw MediaError.cancelled("writing '\(destination)'") }
    }
}
