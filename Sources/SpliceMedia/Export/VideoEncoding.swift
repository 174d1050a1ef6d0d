internal import CFFmpeg

/// Video settings resolved against a source track: everything the pipeline needs to configure
/// the converter and the encoder, with every default filled in.
struct VideoEncoding: Sendable, Hashable, Codable {
    var codec: VideoSettings.Codec
    /// FFmpeg encoder name (libx264, libx265, libvpx-vp9, libsvtav1, libaom-av1, prores_ks).
    var encoderName: String
    /// Final (upright) output size.
    var width: Int
    var height: Int
    /// Clockwise rotation applied to decoded pictures (0/90/180/270).
    var rotation: Int
    /// Where the picture sits inside the pre-rotation canvas (the rest is black).
    var contentX: Int
    var contentY: Int
    var contentWidth: Int
    var contentHeight: Int
    /// The output's pixel aspect ratio (upright): 1:1, or an anamorphic source's kept (turned with
    /// the picture: a quarter turn swaps its terms).
    var sampleAspectRatio = Rational(1, 1)
    var pixelFormat: String
    /// Encoder time base: the source's (timestamps kept) or 1/rate for a constant rate.
    var timeBase: Rational
    /// Constant output frame rate, when set.
    var constantFrameRate: Rational?
    /// The source's nominal rate, a hint for rate control.
    var nominalFrameRate: Rational?
    var bitrate: Int?
    var maxBitrate: Int?
    var bufferSize: Int?
    var keyframeInterval: Int
    var level: Int?
    var profileNumber: Int?
    /// Encoder private options (preset, crf, profile, x265-params …).
    var options: [String: String]
    /// HDR10 metadata the output carries (in the bitstream where the encoder can, and in the
    /// container); nil for SDR output.
    var hdr: HDRMetadata? = nil
    /// The output's colour description, as FFmpeg's enum values (nil: unspecified, as the source).
    var colorPrimaries: Int32? = nil
    var colorTransfer: Int32? = nil
    var colorSpace: Int32? = nil
    /// Tone mapping from the source's HDR transfer to SDR BT.709, when asked for.
    var toneMap: ToneMapping? = nil

    /// What ``ToneMapper`` needs to know about the source.
    struct ToneMapping: Sendable, Hashable, Codable {
        /// FFmpeg's transfer name of the source ("smpte2084" or "arib-std-b67").
        var transfer: String
        /// The source's primaries ("bt2020" usually).
        var primaries: String?
        /// The brightest the content gets, cd/m² (mastering display or light level; 1000 when unknown).
        var peak: Int
    }

    /// The canvas the decoded picture is scaled into before rotation.
    var canvasWidth: Int { rotation % 180 == 0 ? width : height }
    var canvasHeight: Int { rotation % 180 == 0 ? height : width }

    /// Resolves `settings` for `source`. Adds human-readable notes to `notices` for anything it
    /// had to adjust (odd sizes rounded for chroma subsampling).
    /// `closedGOP` (for segments) makes every keyframe a clean entry point (x265 defaults to open
    /// GOPs) and sets the rate control up for joining (``RateControl``); `segmentLength`, the
    /// length of the segment this encoder codes, sets x264's rate tolerance for an average rate.
    static func resolve(_ settings: VideoSettings, source: Track, fileType: OutputFileType?,
                        threads: Int, closedGOP: Bool = false, segmentLength: MediaTime? = nil,
                        notices: inout [String]) throws(SettingsError) -> VideoEncoding {
        try settings.validate()
        if let fileType { try settings.validate(for: fileType) }
        let codec = settings.codec.descriptor
        let (encoderDescriptor, encoder) = try Self.encoder(for: settings.codec, named: settings.encoder)
        let encoderName = encoderDescriptor.name

        // Pixel format: the source's depth where the codec has it (H.264 High 10, HEVC Main 10,
        // VP9 profile 2, AV1), 8-bit otherwise and for tone-mapped output.
        let toneMaps = settings.toneMap == true && source.isHDR
        if settings.toneMap == true && !source.isHDR {
            notices.append("--tone-map has nothing to do: the source is not HDR (\(source.colorTransfer ?? "unspecified transfer"))")
        }
        let deep = (source.bitDepth ?? 8) > 8 && !toneMaps
        let pixelFormat = settings.pixelFormat ?? codec.defaultPixelFormat(settings.profile, deep)
        let supported = supportedPixelFormats(encoder)
        if !supported.isEmpty && !supported.contains(pixelFormat) {
            throw SettingsError(field: "pixel-format", value: pixelFormat,
                                allowed: SettingsError.oneOf(supported) + " for \(settings.codec)")
        }
        let format = av_get_pix_fmt(pixelFormat)
        guard format != AV_PIX_FMT_NONE, let desc = av_pix_fmt_desc_get(format) else {
            throw SettingsError(field: "pixel-format", value: pixelFormat, allowed: "an FFmpeg pixel format name")
        }
        let alignX = 1 << Int(desc.pointee.log2_chroma_w), alignY = 1 << Int(desc.pointee.log2_chroma_h)
        let outputDepth = Int(desc.pointee.comp.0.depth)
        if source.isHDR && !toneMaps && outputDepth <= 8 {
            // 8-bit PQ/HLG bands visibly and no HDR specification allows it.
            throw SettingsError(field: "pixel-format", value: pixelFormat,
                                allowed: "at least 10 bits (e.g. yuv420p10le) for this HDR source (\(source.colorTransfer ?? "HDR")); "
                                    + "add --tone-map to make 8-bit SDR instead")
        }

        // Size: upright source display size, a requested box, or one side with the aspect kept.
        guard var display = source.displaySize, display.width > 0, display.height > 0,
              let storedWidth = source.width, let storedHeight = source.height else {
            throw SettingsError(field: "video-codec", value: settings.codec.rawValue,
                                allowed: "used on a source whose picture size is known")
        }
        // An anamorphic source with no size asked for keeps its stored pixels and their shape:
        // scaling 720×480 up to 854×480 adds pixels to encode and detail to none.
        var sampleAspectRatio = Rational(1, 1)
        if let sar = source.sampleAspectRatio, settings.width == nil, settings.height == nil, settings.squarePixels != true {
            let quarterTurned = source.rotation % 180 != 0
            display = quarterTurned ? (storedHeight, storedWidth) : (storedWidth, storedHeight)
            sampleAspectRatio = quarterTurned ? Rational(sar.denominator, sar.numerator) : sar
        }
        var width: Int, height: Int
        switch (settings.width, settings.height) {
        case let (w?, h?): (width, height) = (w, h)
        case let (w?, nil): (width, height) = (w, Int(MediaTime.rescale(Int64(w), multiplier: Int64(display.height), divisor: Int64(display.width))))
        case let (nil, h?): (width, height) = (Int(MediaTime.rescale(Int64(h), multiplier: Int64(display.width), divisor: Int64(display.height))), h)
        case (nil, nil): (width, height) = display
        }
        width = align(width, to: alignX, name: "width", format: pixelFormat, notices: &notices)
        height = align(height, to: alignY, name: "height", format: pixelFormat, notices: &notices)

        // Aspect fit inside the pre-rotation canvas.
        let rotation = source.rotation
        let canvasW = rotation % 180 == 0 ? width : height, canvasH = rotation % 180 == 0 ? height : width
        let srcW = Int64(rotation % 180 == 0 ? display.width : display.height)
        let srcH = Int64(rotation % 180 == 0 ? display.height : display.width)
        var cw = canvasW, ch = canvasH
        if Int64(canvasW) * srcH <= Int64(canvasH) * srcW {
            ch = Int(MediaTime.rescale(Int64(canvasW), multiplier: srcH, divisor: srcW))
        } else {
            cw = Int(MediaTime.rescale(Int64(canvasH), multiplier: srcW, divisor: srcH))
        }
        let rotAlignX = rotation % 180 == 0 ? alignX : alignY, rotAlignY = rotation % 180 == 0 ? alignY : alignX
        cw = min(canvasW, max(rotAlignX, (cw + rotAlignX / 2) / rotAlignX * rotAlignX))
        ch = min(canvasH, max(rotAlignY, (ch + rotAlignY / 2) / rotAlignY * rotAlignY))
        let cx = (canvasW - cw) / 2 / rotAlignX * rotAlignX, cy = (canvasH - ch) / 2 / rotAlignY * rotAlignY

        // Time.
        let nominal = settings.frameRate ?? source.frameRate
        let timeBase: Rational
        if let rate = settings.frameRate {
            timeBase = Rational(rate.denominator, rate.numerator).reduced
        } else if source.timeBase.isPositive {
            timeBase = source.timeBase.reduced
        } else {
            timeBase = Rational(1, 90000)
        }
        // By default a keyframe at most every ten seconds, and wherever the encoder's scene-cut
        // detection puts one (what ffmpeg and HandBrake do for files): a keyframe every second — a
        // capture habit — cost 38 % more bits for 0.8 dB on a real clip. Every segment still starts
        // with an IDR of its own; streaming packages ask for fixed, closed GOPs themselves.
        let keyframeInterval = settings.keyframeInterval
            ?? max(1, 10 * Int(nominal.map { MediaTime.rescale(Int64($0.numerator), multiplier: 1, divisor: Int64($0.denominator)) } ?? 30))

        // Rate control (see ``RateControl``): constant quality unless a bit rate is asked for.
        var bitrate = settings.bitrate
        let quality = settings.quality ?? (settings.bitrate == nil ? encoderDescriptor.defaultQuality : nil)
        if quality != nil && encoderDescriptor.constantQualityNeedsZeroBitrate { bitrate = 0 }
        // Segments start their buffer model where every predecessor is steered to leave it
        // (``RateControl/segmentBufferFill``), not at the encoders' 90 %; all of them alike, as x265
        // writes its parameters into the codec headers the stitcher compares.
        var request = VideoEncoderDescriptor.EncoderRequest(
            preset: settings.preset, profile: settings.profile, level: settings.level, threads: threads,
            closedGOP: closedGOP)
        if closedGOP && settings.bitrate != nil, let length = segmentLength {
            request.rateTolerance = RateControl.segmentRateTolerance(length: length)
        }
        if closedGOP && settings.maxBitrate != nil && settings.bufferSize != nil {
            request.bufferFill = RateControl.segmentBufferFill
        }
        // Colour description and HDR10 metadata: kept, or BT.709 SDR when tone-mapped.
        var hdr = source.isHDR && !toneMaps ? source.hdr : nil
        var primaries = source.colorPrimaries.map { av_color_primaries_from_name($0) }.flatMap { $0 >= 0 ? $0 : nil }
        var transfer = source.colorTransfer.map { av_color_transfer_from_name($0) }.flatMap { $0 >= 0 ? $0 : nil }
        var space = source.colorSpace.map { av_color_space_from_name($0) }.flatMap { $0 >= 0 ? $0 : nil }
        var toneMapping: ToneMapping?
        if toneMaps {
            let peak = source.hdr?.masteringDisplay.map { Int(MediaTime.rescale(Int64($0.maxLuminance.numerator), multiplier: 1,
                                                                              divisor: Int64(max(1, $0.maxLuminance.denominator)))) }
                ?? source.hdr?.contentLightLevel?.maxContent ?? 1000
            toneMapping = ToneMapping(transfer: source.colorTransfer ?? "smpte2084", primaries: source.colorPrimaries,
                                      peak: max(100, peak > 0 ? peak : 1000))
            primaries = Int32(AVCOL_PRI_BT709.rawValue)
            transfer = Int32(AVCOL_TRC_BT709.rawValue)
            space = Int32(AVCOL_SPC_BT709.rawValue)
            hdr = nil
        }
        request.hdr = hdr
        var setup = encoderDescriptor.configure(request)
        if let quality { setup.options["crf"] = "\(quality)" }

        return VideoEncoding(
            codec: settings.codec, encoderName: encoderName, width: width, height: height, rotation: rotation,
            contentX: cx, contentY: cy, contentWidth: cw, contentHeight: ch, sampleAspectRatio: sampleAspectRatio,
            pixelFormat: pixelFormat,
            timeBase: timeBase, constantFrameRate: settings.frameRate, nominalFrameRate: nominal,
            bitrate: bitrate, maxBitrate: settings.maxBitrate, bufferSize: settings.bufferSize,
            keyframeInterval: keyframeInterval,
            level: setup.level, profileNumber: setup.profileNumber, options: setup.options, hdr: hdr, colorPrimaries: primaries, colorTransfer: transfer,
            colorSpace: space, toneMap: toneMapping)
    }

    /// The encoder used for a codec: the one asked for (`--video-encoder`), else the first of its
    /// descriptor's encoders this FFmpeg has (AV1: SVT-AV1 when present, else libaom).
    static func encoder(for codec: VideoSettings.Codec, named name: String? = nil) throws(SettingsError)
        -> (VideoEncoderDescriptor, UnsafePointer<AVCodec>) {
        if let name {
            guard let descriptor = codec.descriptor.encoders.first(where: { $0.name == name }) else {
                throw SettingsError(field: "video-encoder", value: name,
                                    allowed: SettingsError.oneOf(codec.descriptor.encoders.map(\.name)) + " for \(codec)")
            }
            guard let encoder = avcodec_find_encoder_by_name(name) else {
                let here = codec.descriptor.encoders.map(\.name).filter { avcodec_find_encoder_by_name($0) != nil }
                throw SettingsError(field: "video-encoder", value: name,
                                    allowed: "an encoder this FFmpeg has (for \(codec): "
                                        + (here.isEmpty ? "none" : here.joined(separator: ", ")) + ")")
            }
            return (descriptor, encoder)
        }
        for candidate in codec.descriptor.encoders {
            if let encoder = avcodec_find_encoder_by_name(candidate.name) { return (candidate, encoder) }
        }
        let names = codec.descriptor.encoders.map(\.name).joined(separator: " or ")
        throw SettingsError(field: "video-codec", value: codec.rawValue, allowed: "a codec this FFmpeg can encode (no \(names))")
    }

    static func supportedPixelFormats(_ codec: UnsafePointer<AVCodec>) -> [String] {
        guard var p = codec.pointee.pix_fmts else { return [] }
        var names: [String] = []
        while p.pointee != AV_PIX_FMT_NONE {
            if let n = FFmpeg.string(av_get_pix_fmt_name(p.pointee)) { names.append(n) }
            p += 1
        }
        return names
    }

    private static func align(_ value: Int, to step: Int, name: String, format: String, notices: inout [String]) -> Int {
        guard step > 1, value % step != 0 else { return max(value, step) }
        let rounded = max(step, (value + step / 2) / step * step)
        notices.append("\(name) \(value) rounded to \(rounded): \(format) needs multiples of \(step)")
        return rounded
    }
}
