internal import CFFmpeg

/// Turns decoded pictures into encoder input: scale and convert into the content rectangle of
/// a black canvas (aspect fit), then rotate upright. Frames that already match pass straight through.
final class VideoConverter {
    private let encoding: VideoEncoding
    private let format: AVPixelFormat
    /// The canvas format: the output format, or 4:4:4 when the output's chroma subsampling is not
    /// the same both ways (4:2:2 planes cannot be turned a quarter without changing layout).
    private let canvasFormat: AVPixelFormat
    private let geometry: PlaneGeometry
    private let scaler = Scaler()
    private let finalScaler = Scaler()
    /// Pre-rotation canvas (only when rotating).
    private let canvas = Frame()
    /// The rotated canvas, when the canvas format differs from the output format.
    private let rotated = Frame()
    /// What the encoder receives.
    private let output = Frame()
    private var allocated = false
    /// HDR → SDR, when the encoding asks for it.
    private let toneMapper: ToneMapper?

    init(encoding: VideoEncoding) {
        self.encoding = encoding
        format = av_get_pix_fmt(encoding.pixelFormat)
        let outputGeometry = PlaneGeometry(format: format)
        if encoding.rotation % 180 != 0 && outputGeometry.chromaShiftX != outputGeometry.chromaShiftY {
            let deep = (av_pix_fmt_desc_get(format)?.pointee.comp.0.depth ?? 8) > 8
            canvasFormat = deep ? AV_PIX_FMT_YUV444P16LE : AV_PIX_FMT_YUV444P
        } else {
            canvasFormat = format
        }
        geometry = PlaneGeometry(format: canvasFormat)
        toneMapper = encoding.toneMap.map(ToneMapper.init)
    }

    private var padded: Bool {
        encoding.contentX != 0 || encoding.contentY != 0
            || encoding.contentWidth != encoding.canvasWidth || encoding.contentHeight != encoding.canvasHeight
    }

    private func allocate() throws(MediaError) {
        let needsRotated = encoding.rotation != 0 && canvasFormat != format
        for (frame, w, h, fmt) in [(output, encoding.width, encoding.height, format),
                                   (canvas, encoding.canvasWidth, encoding.canvasHeight, canvasFormat),
                                   (rotated, encoding.width, encoding.height, canvasFormat)] {
            if frame === canvas && encoding.rotation == 0 { continue }
            if frame === rotated && !needsRotated { continue }
            frame.pointer.pointee.format = fmt.rawValue
            frame.pointer.pointee.width = Int32(w)
            frame.pointer.pointee.height = Int32(h)
            let ret = av_frame_get_buffer(frame.pointer, 0)
            if ret < 0 { throw FFmpeg.error(.internalError, "cannot allocate a \(w)x\(h) picture", ret) }
        }
        allocated = true
    }

    /// The encoder-ready picture for `frame` (which may be `frame` itself).
    func convert(_ decoded: Frame) throws(MediaError) -> Frame {
        let frame = try toneMapper?.map(decoded) ?? decoded
        let f = frame.pointer.pointee
        if encoding.rotation == 0 && !padded && Int(f.width) == encoding.width && Int(f.height) == encoding.height
            && f.format == format.rawValue && f.color_range != AVCOL_RANGE_JPEG {
            return frame
        }
        if !allocated { try allocate() }
        let target = encoding.rotation == 0 ? output : canvas
        try renew(target)
        if target !== output { try renew(output) }
        if padded { fillBlack(target) }
        let rect = PixelRect(x: encoding.contentX, y: encoding.contentY, width: encoding.contentWidth, height: encoding.contentHeight)
        try scaler.scale(frame, into: target, rect: rect)
        if encoding.rotation != 0 {
            if canvasFormat == format {
                rotate(canvas, into: output)
            } else {
                rotate(canvas, into: rotated)
                try finalScaler.scale(rotated, into: output,
                                      rect: PixelRect(x: 0, y: 0, width: encoding.width, height: encoding.height))
            }
        }
        // Carry the colour description (the encoding's: the source's, or BT.709 after tone
        // mapping); the converter always produces limited range.
        output.pointer.pointee.colorspace = encoding.colorSpace.map { AVColorSpace(UInt32($0)) } ?? f.colorspace
        output.pointer.pointee.color_primaries = encoding.colorPrimaries.map { AVColorPrimaries(UInt32($0)) } ?? f.color_primaries
        output.pointer.pointee.color_trc = encoding.colorTransfer.map { AVColorTransferCharacteristic(UInt32($0)) } ?? f.color_trc
        output.pointer.pointee.color_range = AVCOL_RANGE_MPEG
        return output
    }

    /// Gives `frame` buffers of its own when another reference still holds the last picture (an
    /// encoder thread that has not encoded it yet, ``RenditionThread``). Fresh buffers, not
    /// `av_frame_make_writable`'s copy: every pixel is written again (black first when padded).
    private func renew(_ frame: Frame) throws(MediaError) {
        guard av_frame_is_writable(frame.pointer) == 0 else { return }
        let f = frame.pointer.pointee
        let (format, width, height) = (f.format, f.width, f.height)
        av_frame_unref(frame.pointer)
        frame.pointer.pointee.format = format
        frame.pointer.pointee.width = width
        frame.pointer.pointee.height = height
        let ret = av_frame_get_buffer(frame.pointer, 0)
        if ret < 0 { throw FFmpeg.error(.internalError, "cannot allocate a \(width)x\(height) picture", ret) }
    }

    private func fillBlack(_ frame: Frame) {
        var lines = [Int](repeating: 0, count: 4)
        withUnsafePointer(to: frame.pointer.pointee.linesize) { tuple in
            tuple.withMemoryRebound(to: Int32.self, capacity: 8) { for i in 0..<4 { lines[i] = Int($0[i]) } }
        }
        withUnsafeMutablePointer(to: &frame.pointer.pointee.data) { tuple in
            tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                _ = av_image_fill_black(data, lines, AVPixelFormat(frame.pointer.pointee.format), AVCOL_RANGE_MPEG, frame.pointer.pointee.width,
                                        frame.pointer.pointee.height)
            }
        }
    }

    private func rotate(_ src: Frame, into dst: Frame) {
        let w = Int(src.pointer.pointee.width), h = Int(src.pointer.pointee.height)
        withUnsafePointer(to: src.pointer.pointee.data) { sTuple in
            sTuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { sData in
                withUnsafePointer(to: dst.pointer.pointee.data) { dTuple in
                    dTuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { dData in
                        withUnsafePointer(to: src.pointer.pointee.linesize) { sl in
                            sl.withMemoryRebound(to: Int32.self, capacity: 8) { sLines in
                                withUnsafePointer(to: dst.pointer.pointee.linesize) { dl in
                                    dl.withMemoryRebound(to: Int32.self, capacity: 8) { dLines in
                                        for p in 0..<geometry.planeCount {
                                            let size = geometry.planeSize(plane: p, width: w, height: h)
                                            PlaneRotation.rotate(
                                                src: sData[p]!, srcStride: Int(sLines[p]), width: size.width,
                                                height: size.height, dst: dData[p]!, dstStride: Int(dLines[p]),
                                                step: geometry.steps[p], clockwise: encoding.rotation)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

extension VideoEncoding {
    /// Whether this encoding's converted picture can stand in for the decoded picture of `smaller`
    /// (a ladder rung scaled from a larger rung's picture rather than from the full-size decoded
    /// one): both show the whole picture unpadded, turned the same way, in the same pixel format
    /// and colours, and this one is at least twice as large both ways. Only then is the second
    /// scaling nearly free of loss: its filter cuts far below the first one's, so the detail the
    /// first took away was never going to survive (720p → 360p: 0.03–0.08 dB under scaling from
    /// 1080p after encoding; 720p → 540p lost 0.3 dB, more than the scaling it saves is worth).
    func canFeed(_ smaller: VideoEncoding) -> Bool {
        isUnpadded && smaller.isUnpadded && rotation == smaller.rotation && pixelFormat == smaller.pixelFormat
            && toneMap == smaller.toneMap && sampleAspectRatio == smaller.sampleAspectRatio && colorPrimaries == smaller.colorPrimaries
            && colorTransfer == smaller.colorTransfer && colorSpace == smaller.colorSpace
            && width >= 2 * smaller.width && height >= 2 * smaller.height
    }

    /// The conversion left to do from a picture made by an encoding that ``canFeed(_:)`` this one:
    /// already upright, tone mapped and in the output format, so only scaling to the full size.
    var fromLargerPicture: VideoEncoding {
        var e = self
        e.rotation = 0
        e.contentX = 0
        e.contentY = 0
        e.contentWidth = width
        e.contentHeight = height
        e.toneMap = nil
        return e
    }

    private var isUnpadded: Bool {
        contentX == 0 && contentY == 0 && contentWidth == canvasWidth && contentHeight == canvasHeight
    }
}
