internal import CFFmpeg

/// Owns a `SwsContext` (freed in deinit) and scales/converts frames into a rectangle of a
/// destination frame. The context is rebuilt only when the source or destination shape changes.
final class Scaler {
    private var context: OpaquePointer?

    deinit { sws_freeContext(context) }

    /// Scales all of `source` into the rectangle `rect` of `destination` (whose buffers must exist).
    func scale(_ source: Frame, into destination: Frame, rect: PixelRect) throws(MediaError) {
        let src = source.pointer.pointee
        let dstFormat = AVPixelFormat(destination.pointer.pointee.format)
        let srcFormat = AVPixelFormat(src.format)
        context = sws_getCachedContext(context, src.width, src.height, srcFormat,
                                       Int32(rect.width), Int32(rect.height), dstFormat,
                                       SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil)
        guard let context else {
            let from = FFmpeg.string(av_get_pix_fmt_name(srcFormat)) ?? "?"
            let to = FFmpeg.string(av_get_pix_fmt_name(dstFormat)) ?? "?"
            throw MediaError(.invalidSettings, "cannot convert video from \(from) \(src.width)x\(src.height) "
                             + "to \(to) \(rect.width)x\(rect.height)")
        }
        // Keep the source's matrix (BT.601/709…) and convert full range to the limited range
        // every encoder here signals by default.
        let space = src.colorspace == AVCOL_SPC_UNSPECIFIED
            ? (src.height > 576 ? AVCOL_SPC_BT709 : AVCOL_SPC_SMPTE170M) : src.colorspace
        let table = sws_getCoefficients(Int32(space.rawValue))
        let srcFull: Int32 = src.color_range == AVCOL_RANGE_JPEG || isFullRangeFormat(srcFormat) ? 1 : 0
        sws_setColorspaceDetails(context, table, srcFull, table, 0, 0, 1 << 16, 1 << 16)

        var planes = [UnsafeMutablePointer<UInt8>?](repeating: nil, count: 4)
        var strides = [Int32](repeating: 0, count: 4)
        let geometry = PlaneGeometry(format: dstFormat)
        withUnsafePointer(to: destination.pointer.pointee.data) { dataTuple in
            dataTuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                withUnsafePointer(to: destination.pointer.pointee.linesize) { lineTuple in
                    lineTuple.withMemoryRebound(to: Int32.self, capacity: 8) { lines in
                        for p in 0..<geometry.planeCount {
                            let offset = geometry.byteOffset(plane: p, x: rect.x, y: rect.y, stride: Int(lines[p]))
                            planes[p] = data[p].map { $0 + offset }
                            strides[p] = lines[p]
                        }
                    }
                }
            }
        }
        let h = withUnsafePointer(to: source.pointer.pointee.data) { dataTuple in
            dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { srcData in
                withUnsafePointer(to: source.pointer.pointee.linesize) { lineTuple in
                    lineTuple.withMemoryRebound(to: Int32.self, capacity: 8) { srcLines in
                        sws_scale(context, srcData, srcLines, 0, src.height, &planes, &strides)
                    }
                }
            }
        }
        if h <= 0 { throw MediaError(.internalError, "video scaling produced no picture") }
    }

    private func isFullRangeFormat(_ f: AVPixelFormat) -> Bool {
        f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P || f == AV_PIX_FMT_YUVJ440P
    }
}

/// A rectangle in pixels.
struct PixelRect: Equatable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int
}

/// How a pixel format lays its planes out: bytes per sample step and chroma subsampling.
struct PlaneGeometry {
    let planeCount: Int
    /// log2 of horizontal/vertical chroma subsampling.
    let chromaShiftX: Int
    let chromaShiftY: Int
    /// Bytes per pixel step in each plane.
    let steps: [Int]
    /// Whether each plane is a chroma plane (subsampled).
    let isChroma: [Bool]

    init(format: AVPixelFormat) {
        let desc = av_pix_fmt_desc_get(format)!.pointee
        chromaShiftX = Int(desc.log2_chroma_w)
        chromaShiftY = Int(desc.log2_chroma_h)
        var steps = [Int](repeating: 0, count: 4)
        var chroma = [Bool](repeating: false, count: 4)
        var count = 0
        withUnsafePointer(to: desc.comp) { tuple in
            tuple.withMemoryRebound(to: AVComponentDescriptor.self, capacity: 4) { comps in
                for c in 0..<Int(desc.nb_components) {
                    let plane = Int(comps[c].plane)
                    steps[plane] = max(steps[plane], Int(comps[c].step))
                    // In YUV formats components 1 and 2 (U, V) are the subsampled ones.
                    if desc.flags & UInt64(AV_PIX_FMT_FLAG_RGB) == 0 && (c == 1 || c == 2) { chroma[plane] = true }
                    count = max(count, plane + 1)
                }
            }
        }
        planeCount = count
        self.steps = steps
        isChroma = chroma
    }

    /// The byte offset of pixel (x, y) in `plane`.
    func byteOffset(plane: Int, x: Int, y: Int, stride: Int) -> Int {
        let px = isChroma[plane] ? x >> chromaShiftX : x
        let py = isChroma[plane] ? y >> chromaShiftY : y
        return py * stride + px * steps[plane]
    }

    /// Width and height of `plane` for a picture of `width` × `height`.
    func planeSize(plane: Int, width: Int, height: Int) -> (width: Int, height: Int) {
        guard isChroma[plane] else { return (width, height) }
        return ((width + (1 << chromaShiftX) - 1) >> chromaShiftX, (height + (1 << chromaShiftY) - 1) >> chromaShiftY)
    }
}
