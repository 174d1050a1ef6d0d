internal import CFFmpeg

/// Owns an `AVCodecContext` used as a decoder or an encoder (freed in deinit). Confined to one thread.
final class CodecContext {
    let pointer: UnsafeMutablePointer<AVCodecContext>
    let codec: UnsafePointer<AVCodec>
    /// What the context is, for messages ("h264 decoder for 'in.mp4'").
    let role: String

    private init(codec: UnsafePointer<AVCodec>, role: String) {
        guard let ctx = avcodec_alloc_context3(codec) else { fatalError("avcodec_alloc_context3: out of memory") }
        self.pointer = ctx
        self.codec = codec
        self.role = role
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&ctx)
    }

    var codecName: String { FFmpeg.string(codec.pointee.name) ?? "?" }

    /// A decoder for `stream`, opened, with `threads` worker threads (0 = FFmpeg picks).
    static func decoder(for stream: UnsafeMutablePointer<AVStream>, location: String,
                        threads: Int) throws(MediaError) -> CodecContext {
        let par = stream.pointee.codecpar!
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            let name = FFmpeg.string(avcodec_get_name(par.pointee.codec_id)) ?? "unknown"
            throw MediaError(.unsupportedCodec,
                             "'\(location)' track \(stream.pointee.index) uses codec '\(name)', which this FFmpeg cannot decode")
        }
        let ctx = CodecContext(codec: codec, role: "\(FFmpeg.string(codec.pointee.name) ?? "?") decoder for '\(location)'")
        var ret = avcodec_parameters_to_context(ctx.pointer, par)
        if ret < 0 { throw FFmpeg.error(.decodeFailed, "cannot configure the \(ctx.role)", ret) }
        ctx.pointer.pointee.pkt_timebase = stream.pointee.time_base
        ctx.pointer.pointee.thread_count = Int32(threads)
        FFmpeg.clearLastLog()
        ret = avcodec_open2(ctx.pointer, codec, nil)
        if ret < 0 { throw FFmpeg.error(.decodeFailed, "cannot open the \(ctx.role)", ret) }
        return ctx
    }

    /// A decoder for the stream an opened encoder writes (its codec, picture and extradata), for
    /// reading the encoder's own packets back (``QualityMeter``); `timeBase` is the packets'.
    static func decoder(readingBack encoder: CodecContext, threads: Int) throws(MediaError) -> CodecContext {
        guard let par = avcodec_parameters_alloc() else { fatalError("avcodec_parameters_alloc: out of memory") }
        var owned: UnsafeMutablePointer<AVCodecParameters>? = par
        defer { avcodec_parameters_free(&owned) }
        var ret = avcodec_parameters_from_context(par, encoder.pointer)
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot describe the \(encoder.role)'s stream", ret) }
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            throw MediaError(.unsupportedCodec, "this FFmpeg cannot decode what its \(encoder.role) writes, so its "
                             + "quality cannot be measured")
        }
        let ctx = CodecContext(codec: codec, role: "\(FFmpeg.string(codec.pointee.name) ?? "?") decoder reading back the \(encoder.role)")
        ret = avcodec_parameters_to_context(ctx.pointer, par)
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot configure the \(ctx.role)", ret) }
        ctx.pointer.pointee.pkt_timebase = encoder.pointer.pointee.time_base
        ctx.pointer.pointee.thread_count = Int32(threads)
        FFmpeg.clearLastLog()
        ret = avcodec_open2(ctx.pointer, codec, nil)
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot open the \(ctx.role)", ret) }
        return ctx
    }

    /// An encoder by FFmpeg encoder name, not yet opened (set fields, then call ``open(options:)``).
    static func encoder(named name: String) throws(MediaError) -> CodecContext {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError(.unsupportedCodec, "this FFmpeg has no '\(name)' encoder; install a build that includes it")
        }
        return CodecContext(codec: codec, role: "\(name) encoder")
    }

    /// Opens an encoder with private options (`preset`, `crf`, …). Unknown options are an error.
    func open(options: [String: String]) throws(MediaError) {
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }
        FFmpeg.clearLastLog()
        let ret = avcodec_open2(pointer, codec, &dict)
        if ret < 0 { throw FFmpeg.error(.encodeFailed, "cannot open the \(role)", ret, hint: "check the encoder settings") }
        if let left = av_dict_get(dict, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw MediaError(.invalidSettings, "the \(role) does not accept option '\(String(cString: left.pointee.key))'")
        }
    }

    /// Sends a packet (or nil to start draining) to a decoder. Returns false when the decoder
    /// wants its output read first (EAGAIN) — the packet was not consumed.
    func send(packet: Packet?) throws(MediaError) -> Bool {
        let ret = avcodec_send_packet(pointer, packet?.pointer)
        if ret == FFmpeg.eagain { return false }
        if ret == FFmpeg.eof { return true }
        if ret < 0 { throw FFmpeg.error(.decodeFailed, "the \(role) failed", ret, hint: "the input may be corrupt") }
        return true
    }

    /// Sends a frame (or nil to drain) to an encoder. Returns false on EAGAIN (read packets first).
    func send(frame: Frame?) throws(MediaError) -> Bool {
        let ret = avcodec_send_frame(pointer, frame?.pointer)
        if ret == FFmpeg.eagain { return false }
        if ret == FFmpeg.eof { return true }
        if ret < 0 { throw FFmpeg.error(.encodeFailed, "the \(role) failed", ret) }
        return true
    }

    /// Decodes `packet` (nil drains the decoder) and hands each frame that comes out to `body`,
    /// while `shouldContinue` holds. EAGAIN on send means "read the output first": the frames are
    /// handed over, then the packet is sent again.
    func decode(_ packet: Packet?, into frame: Frame, while shouldContinue: () -> Bool,
                _ body: (Frame) throws(MediaError) -> Void) throws(MediaError) {
        func drain() throws(MediaError) {
            while shouldContinue(), try receive(frame: frame) == .ready {
                try body(frame)
            }
        }
        while try !send(packet: packet) {
            try drain()
        }
        try drain()
    }

    enum Output { case ready, needsInput, finished }

    /// Reads one decoded frame.
    func receive(frame: Frame) throws(MediaError) -> Output {
        frame.unref()
        let ret = avcodec_receive_frame(pointer, frame.pointer)
        if ret == FFmpeg.eagain { return .needsInput }
        if ret == FFmpeg.eof { return .finished }
        if ret < 0 { throw FFmpeg.error(.decodeFailed, "the \(role) failed", ret, hint: "the input may be corrupt") }
        return .ready
    }

    /// Reads one encoded packet.
    func receive(packet: Packet) throws(MediaError) -> Output {
        packet.unref()
        let ret = avcodec_receive_packet(pointer, packet.pointer)
        if ret == FFmpeg.eagain { return .needsInput }
        if ret == FFmpeg.eof { return .finished }
        if ret < 0 { throw FFmpeg.error(.encodeFailed, "the \(role) failed", ret) }
        return .ready
    }
}
