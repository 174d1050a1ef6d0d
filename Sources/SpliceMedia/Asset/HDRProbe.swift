internal import CFFmpeg

extension HDRMetadata {
    /// The metadata a container keeps for a stream (Matroska's MasteringMetadata, MP4's
    /// `mdcv`/`clli`), or nil.
    init?(streamSideDataOf st: UnsafeMutablePointer<AVStream>) {
        var size = 0
        var result = HDRMetadata()
        if let data = av_stream_get_side_data(st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size),
           size >= MemoryLayout<AVMasteringDisplayMetadata>.size {
            result.masteringDisplay = MasteringDisplay(UnsafeRawPointer(data).assumingMemoryBound(to: AVMasteringDisplayMetadata.self))
        }
        if let data = av_stream_get_side_data(st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size),
           size >= MemoryLayout<AVContentLightMetadata>.size {
            result.contentLightLevel = ContentLightLevel(UnsafeRawPointer(data).assumingMemoryBound(to: AVContentLightMetadata.self))
        }
        guard result.masteringDisplay != nil || result.contentLightLevel != nil else { return nil }
        self = result
    }

    /// The metadata a decoded picture carries (from SEI or AV1 metadata), or nil.
    init?(frame: UnsafeMutablePointer<AVFrame>) {
        var result = HDRMetadata()
        if let sd = av_frame_get_side_data(frame, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA) {
            result.masteringDisplay = MasteringDisplay(UnsafeRawPointer(sd.pointee.data).assumingMemoryBound(to: AVMasteringDisplayMetadata.self))
        }
        if let sd = av_frame_get_side_data(frame, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL) {
            result.contentLightLevel = ContentLightLevel(UnsafeRawPointer(sd.pointee.data).assumingMemoryBound(to: AVContentLightMetadata.self))
        }
        guard result.masteringDisplay != nil || result.contentLightLevel != nil else { return nil }
        self = result
    }

    /// Puts the metadata on an output stream, where the Matroska and MP4 muxers write it
    /// (MasteringMetadata; `mdcv` and `clli`).
    func attach(to st: UnsafeMutablePointer<AVStream>) {
        if let m = masteringDisplay,
           let data = av_stream_new_side_data(st, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, MemoryLayout<AVMasteringDisplayMetadata>.size) {
            data.withMemoryRebound(to: AVMasteringDisplayMetadata.self, capacity: 1) { m.fill($0) }
        }
        if let c = contentLightLevel,
           let data = av_stream_new_side_data(st, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, MemoryLayout<AVContentLightMetadata>.size) {
            data.withMemoryRebound(to: AVContentLightMetadata.self, capacity: 1) {
                $0.pointee.MaxCLL = UInt32(c.maxContent)
                $0.pointee.MaxFALL = UInt32(c.maxFrameAverage)
            }
        }
    }
}

extension HDRMetadata.MasteringDisplay {
    init?(_ p: UnsafePointer<AVMasteringDisplayMetadata>) {
        guard p.pointee.has_primaries != 0 || p.pointee.has_luminance != 0 else { return nil }
        let primaries = withUnsafeBytes(of: p.pointee.display_primaries) { raw in
            Array(raw.bindMemory(to: AVRational.self)).map { Rational($0) }
        }
        red = [primaries[0], primaries[1]]
        green = [primaries[2], primaries[3]]
        blue = [primaries[4], primaries[5]]
        whitePoint = [Rational(p.pointee.white_point.0), Rational(p.pointee.white_point.1)]
        minLuminance = Rational(p.pointee.min_luminance)
        maxLuminance = Rational(p.pointee.max_luminance)
    }

    func fill(_ p: UnsafeMutablePointer<AVMasteringDisplayMetadata>) {
        let values = (red + green + blue).map(\.av)
        withUnsafeMutableBytes(of: &p.pointee.display_primaries) { raw in
            let r = raw.bindMemory(to: AVRational.self)
            for i in 0..<6 { r[i] = values[i] }
        }
        p.pointee.white_point = (whitePoint[0].av, whitePoint[1].av)
        p.pointee.min_luminance = minLuminance.av
        p.pointee.max_luminance = maxLuminance.av
        p.pointee.has_primaries = 1
        p.pointee.has_luminance = 1
    }

    /// x265's and x264's `master-display` text: chromaticities in 0.00002 units, luminance in
    /// 0.0001 cd/m², green first: `G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)`.
    var x26xParameter: String {
        func q(_ r: Rational, _ unit: Int64) -> Int64 {
            MediaTime.rescale(Int64(r.numerator), multiplier: unit, divisor: Int64(max(1, r.denominator)))
        }
        let c = { (p: [Rational]) in "(\(q(p[0], 50000)),\(q(p[1], 50000)))" }
        return "G\(c(green))B\(c(blue))R\(c(red))WP\(c(whitePoint))L(\(q(maxLuminance, 10000)),\(q(minLuminance, 10000)))"
    }
}

extension HDRMetadata.MasteringDisplay {
    /// SVT-AV1's `mastering-display` text: the same order as x265's, in plain chromaticity and
    /// cd/m² (SVT-AV1 1.4 clips x265's integer units to 1.0).
    var svtParameter: String {
        func d(_ r: Rational) -> String {
            // Four decimals, exactly rounded; no floating point.
            let v = MediaTime.rescale(Int64(r.numerator), multiplier: 10000, divisor: Int64(max(1, r.denominator)))
            let frac = String(v % 10000)
            return "\(v / 10000).\(String(repeating: "0", count: 4 - frac.count))\(frac)"
        }
        let c = { (p: [Rational]) in "(\(d(p[0])),\(d(p[1])))" }
        return "G\(c(green))B\(c(blue))R\(c(red))WP\(c(whitePoint))L(\(d(maxLuminance)),\(d(minLuminance)))"
    }
}

extension HDRMetadata.ContentLightLevel {
    init(_ p: UnsafePointer<AVContentLightMetadata>) {
        maxContent = Int(p.pointee.MaxCLL)
        maxFrameAverage = Int(p.pointee.MaxFALL)
    }
}

/// Reads HDR10 metadata from the first picture of a video track.
enum HDRProbe {
    static func firstFrameMetadata(location: String, stream index: Int) throws(MediaError) -> HDRMetadata? {
        let demuxer = try Demuxer(location: location)
        demuxer.discardAll(except: [index])
        let decoder = try CodecContext.decoder(for: demuxer.stream(index), location: location, threads: 1)
        let packet = Packet(), frame = Frame()
        var found: HDRMetadata?
        var done = false
        var reads = 0
        while !done, reads < 200, try demuxer.read(into: packet) {
            reads += 1
            guard packet.streamIndex == Int32(index) else { continue }
            try decoder.decode(packet, into: frame, while: { !done }) { f throws(MediaError) in
                found = HDRMetadata(frame: f.pointer)
                done = true
            }
        }
        return found
    }
}
