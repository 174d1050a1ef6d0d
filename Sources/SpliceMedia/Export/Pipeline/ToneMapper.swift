internal import CFFmpeg
import Foundation

/// Maps HDR pictures (PQ or HLG, BT.2020) to SDR BT.709, for `--tone-map`.
///
/// The picture is converted to 16-bit R'G'B' (swscale, with the source's matrix), each component
/// turned into display light through a 65,536-entry table (PQ's EOTF, or HLG's inverse OETF and
/// its OOTF for a 1000 cd/m² display), the colours moved to BT.709 primaries, the brightest
/// component compressed with the Hable curve from the content's peak to SDR white (100 cd/m²)
/// — the other components scaled alike, so hues hold — and BT.709's inverse EOTF (γ 2.4) applied
/// through a table. The result is an RGB picture tagged BT.709 that the converter scales into
/// the output format like any other. Floating point is confined to pixel values; no time goes
/// through it. Confined to one thread.
final class ToneMapper {
    private let mapping: VideoEncoding.ToneMapping
    private let toRGB = Scaler()
    private let rgb = Frame()
    private var allocated: (Int32, Int32)?
    /// 16-bit code value → linear light in units of SDR white (100 cd/m²).
    private var linear: [Float]
    /// Linear light in 0…1 (4096 steps) → 16-bit BT.709 code value.
    private var gamma: [UInt16]
    private let peak: Float
    private let hlg: Bool

    init(_ mapping: VideoEncoding.ToneMapping) {
        self.mapping = mapping
        hlg = mapping.transfer == "arib-std-b67"
        peak = Float(mapping.peak) / 100
        linear = (0..<65536).map { i -> Float in
            let e = Float(i) / 65535
            if mapping.transfer == "arib-std-b67" {
                // HLG inverse OETF (scene light 0…1); the OOTF is applied per pixel (it needs luminance).
                let a: Float = 0.17883277, b: Float = 0.28466892, c: Float = 0.55991073
                return e <= 0.5 ? e * e / 3 : (expf((e - c) / a) + b) / 12
            }
            // PQ (SMPTE ST 2084) EOTF, cd/m², in units of 100 cd/m².
            let m1: Float = 0.1593017578125, m2: Float = 78.84375
            let c1: Float = 0.8359375, c2: Float = 18.8515625, c3: Float = 18.6875
            let p = powf(e, 1 / m2)
            return powf(max(p - c1, 0) / (c2 - c3 * p), 1 / m1) * 100
        }
        gamma = (0..<4097).map { i in UInt16(min(65535, (powf(Float(i) / 4096, 1 / 2.4) * 65535).rounded())) }
    }

    private static func hable(_ x: Float) -> Float {
        let a: Float = 0.15, b: Float = 0.50, c: Float = 0.10, d: Float = 0.20, e: Float = 0.02, f: Float = 0.30
        return (x * (a * x + c * b) + d * e) / (x * (a * x + b) + d * f) - e / f
    }

    /// The tone-mapped picture (owned by the mapper, valid until the next call).
    func map(_ frame: Frame) throws(MediaError) -> Frame {
        let f = frame.pointer.pointee
        if allocated.map({ $0 != (f.width, f.height) }) ?? true {
            rgb.unref()
            rgb.pointer.pointee.format = AV_PIX_FMT_RGB48LE.rawValue
            rgb.pointer.pointee.width = f.width
            rgb.pointer.pointee.height = f.height
            let ret = av_frame_get_buffer(rgb.pointer, 0)
            if ret < 0 { throw FFmpeg.error(.internalError, "cannot allocate a \(f.width)x\(f.height) picture", ret) }
            allocated = (f.width, f.height)
        }
        if av_frame_make_writable(rgb.pointer) < 0 {
            throw MediaError(.internalError, "cannot get a writable picture buffer (out of memory)")
        }
        try toRGB.scale(frame, into: rgb, rect: PixelRect(x: 0, y: 0, width: Int(f.width), height: Int(f.height)))
        let width = Int(f.width), height = Int(f.height)
        let stride = Int(rgb.pointer.pointee.linesize.0)
        guard let base = rgb.pointer.pointee.data.0 else { return rgb }
        let scale = 1 / ToneMapper.hable(peak)
        // BT.2020 → BT.709 primaries (linear light).
        let m: [Float] = [1.6605, -0.5876, -0.0728, -0.1246, 1.1329, -0.0083, -0.0182, -0.1006, 1.1187]
        let fromBT2020 = mapping.primaries == nil || mapping.primaries == "bt2020"
        linear.withUnsafeBufferPointer { lin in
            gamma.withUnsafeBufferPointer { gam in
                for y in 0..<height {
                    let row = UnsafeMutableRawPointer(base + y * stride).assumingMemoryBound(to: UInt16.self)
                    for x in 0..<width {
                        let p = row + 3 * x
                        var r = lin[Int(UInt16(littleEndian: p[0]))]
                        var g = lin[Int(UInt16(littleEndian: p[1]))]
                        var b = lin[Int(UInt16(littleEndian: p[2]))]
                        if hlg {
                            // OOTF for a 1000 cd/m² display: γ 1.2 on scene luminance.
                            let ys = 0.2627 * r + 0.6780 * g + 0.0593 * b
                            let k = 10 * powf(max(ys, 1e-6), 0.2)
                            r *= k; g *= k; b *= k
                        }
                        if fromBT2020 {
                            (r, g, b) = (m[0] * r + m[1] * g + m[2] * b, m[3] * r + m[4] * g + m[5] * b,
                                         m[6] * r + m[7] * g + m[8] * b)
                        }
                        r = max(r, 0); g = max(g, 0); b = max(b, 0)
                        let brightest = max(r, g, b)
                        if brightest > 1e-6 {
                            let k = min(1, ToneMapper.hable(brightest) * scale) / brightest
                            r *= k; g *= k; b *= k
                        }
                        p[0] = gam[Int(min(4096, r * 4096))].littleEndian
                        p[1] = gam[Int(min(4096, g * 4096))].littleEndian
                        p[2] = gam[Int(min(4096, b * 4096))].littleEndian
                    }
                }
            }
        }
        rgb.pointer.pointee.colorspace = AVCOL_SPC_BT709
        rgb.pointer.pointee.color_primaries = AVCOL_PRI_BT709
        rgb.pointer.pointee.color_trc = AVCOL_TRC_BT709
        rgb.pointer.pointee.color_range = AVCOL_RANGE_JPEG
        return rgb
    }
}
