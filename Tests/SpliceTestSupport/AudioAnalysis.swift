import Foundation

/// Audio oracles: decode with ffmpeg, then measure alignment and quality in plain arithmetic.
/// (Floating point is fine here: these are signal measurements, not media timestamps.)
public enum AudioAnalysis {
    /// An audio track (the first unless `stream` says) decoded by ffmpeg to mono 32-bit float at
    /// its own rate (edit lists applied, so priming is already trimmed).
    public static func decodeMono(_ path: String, stream: String = "0:a:0") async throws -> [Float] {
        let out = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", stream, "-ac", "1",
                                                    "-f", "f32le", "-"])
        return out.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The lag (in samples, within ±`maxLag`) at which `signal` best matches `reference` around
    /// `center`: 0 means aligned. Normalised cross-correlation over a `window`-sample span of the
    /// first differences of both signals: differencing whitens the low tones, whose broad
    /// correlation peak otherwise lets coding noise tip the answer by a sample either way.
    public static func lag(of signal: [Float], against reference: [Float], around center: Int, window: Int = 2048,
                           maxLag: Int = 1500) async -> Int {
        await ExternalTool.computeOffPool {
            lagBlocking(of: signal, against: reference, around: center, window: window, maxLag: maxLag)
        }
    }

    private static func lagBlocking(of signal: [Float], against reference: [Float], around center: Int, window: Int,
                                    maxLag: Int) -> Int {
        let signal = differences(signal), reference = differences(reference)
        let start = max(maxLag, center - window / 2)
        let end = min(min(signal.count, reference.count) - maxLag, start + window)
        guard end > start else { return 0 }
        var best = 0
        var bestScore = -Double.infinity
        for lag in -maxLag...maxLag {
            var dot = 0.0, energy = 0.0
            for i in start..<end {
                let s = Double(signal[i + lag])
                dot += s * Double(reference[i])
                energy += s * s
            }
            let score = energy > 0 ? dot / energy.squareRoot() : -Double.infinity
            if score > bestScore {
                bestScore = score
                best = lag
            }
        }
        return best
    }

    private static func differences(_ x: [Float]) -> [Float] {
        guard !x.isEmpty else { return x }
        var d = [Float](repeating: 0, count: x.count)
        for i in 1..<x.count { d[i] = x[i] - x[i - 1] }
        return d
    }

    /// SNR (dB) of `signal` against `reference` over `range`.
    public static func snr(_ signal: [Float], reference: [Float], range: Range<Int>) -> Double {
        var power = 0.0, noise = 0.0
        for i in range where i >= 0 && i < min(signal.count, reference.count) {
            let r = Double(reference[i]), d = Double(signal[i]) - r
            power += r * r
            noise += d * d
        }
        return noise == 0 ? 200 : 10 * log10(max(power, 1e-20) / noise)
    }

    /// Signal-to-noise ratio (dB) of `signal` against `reference` for each block of `block` samples.
    public static func blockSNR(_ signal: [Float], reference: [Float], block: Int = 1024) async -> [Double] {
        await ExternalTool.computeOffPool {
            let n = min(signal.count, reference.count) / block
            return (0..<n).map { b in snr(signal, reference: reference, range: (b * block)..<((b + 1) * block)) }
        }
    }

    public static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        return s.isEmpty ? 0 : s[s.count / 2]
    }
}

/// Reads the box structure of an MP4/MOV file: enough to count edit lists per track.
public enum MP4Boxes {
    /// One `elst` box: its entries as (segment duration, media time).
    public struct EditList: Sendable {
        public var handler: String
        public var entries: [(duration: Int64, mediaTime: Int64)]
    }

    /// Every track's edit list entries, with the track's handler type ("vide", "soun").
    public static func editLists(_ path: String) throws -> [EditList] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var result: [EditList] = []
        guard let moov = children(data, 0..<data.count).first(where: { $0.type == "moov" }) else { return [] }
        for trak in children(data, moov.payload) where trak.type == "trak" {
            var handler = "?"
            var entries: [(Int64, Int64)] = []
            for box in children(data, trak.payload) {
                if box.type == "mdia", let hdlr = children(data, box.payload).first(where: { $0.type == "hdlr" }) {
                    handler = String(decoding: data[(hdlr.payload.lowerBound + 8)..<(hdlr.payload.lowerBound + 12)], as: UTF8.self)
                }
                if box.type == "edts" {
                    for elst in children(data, box.payload) where elst.type == "elst" {
                        let p = elst.payload.lowerBound
                        let version = data[p]
                        let count = Int(be32(data, p + 4))
                        var o = p + 8
                        for _ in 0..<count {
                            if version == 1 {
                                entries.append((Int64(bitPattern: be64(data, o)), Int64(bitPattern: be64(data, o + 8))))
                                o += 20
                            } else {
                                entries.append((Int64(be32(data, o)), Int64(Int32(bitPattern: be32(data, o + 4)))))
                                o += 12
                            }
                        }
                    }
                }
            }
            result.append(EditList(handler: handler, entries: entries))
        }
        return result
    }

    /// Writes a copy of the MP4 at `path` to `output` with an `iTunSMPB` tag (moov/udta/meta/ilst
    /// `----` com.apple.iTunes), the way iTunes and Apple's encoders state AAC priming without an
    /// edit list. `path`'s `moov` must be its last box (ffmpeg's default layout), so no chunk
    /// offset moves.
    public static func addingITunSMPB(_ path: String, priming: Int, to output: String) throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        let boxes = children(data, 0..<data.count)
        guard let moov = boxes.last, moov.type == "moov" else {
            throw ToolFailure(command: "addingITunSMPB", status: -1, stderr: "\(path): moov is not the last box")
        }
        func box(_ type: String, _ payload: Data) -> Data {
            var size = UInt32(8 + payload.count).bigEndian
            return Data(bytes: &size, count: 4) + Data(type.utf8) + payload
        }
        let zero4 = Data(count: 4)
        let value = String(format: " 00000000 %08X 00000000 %016X", priming, 0)
        var dataHeader = Data([0, 0, 0, 1]) + zero4
        dataHeader += Data(value.utf8)
        let freeform = box("----", box("mean", zero4 + Data("com.apple.iTunes".utf8))
                                     + box("name", zero4 + Data("iTunSMPB".utf8)) + box("data", dataHeader))
        let handler = box("hdlr", Data(count: 8) + Data("mdirappl".utf8) + Data(count: 9))
        let udta = box("udta", box("meta", zero4 + handler + box("ilst", freeform)))
        let start = moov.payload.lowerBound - 8
        var size = UInt32(moov.payload.upperBound - start + udta.count).bigEndian
        data.replaceSubrange(start..<(start + 4), with: Data(bytes: &size, count: 4))
        data.insert(contentsOf: udta, at: moov.payload.upperBound)
        try data.write(to: URL(fileURLWithPath: output))
    }

    private struct Box {
        var type: String
        var payload: Range<Int>
    }

    private static func children(_ data: Data, _ range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var o = range.lowerBound
        while o + 8 <= range.upperBound {
            var size = Int(be32(data, o))
            let type = String(decoding: data[(o + 4)..<(o + 8)], as: UTF8.self)
            var header = 8
            if size == 1 { size = Int(be64(data, o + 8)); header = 16 }
            if size == 0 { size = range.upperBound - o }
            guard size >= header, o + size <= range.upperBound else { break }
            boxes.append(Box(type: type, payload: (o + header)..<(o + size)))
            o += size
        }
        return boxes
    }

    private static func be32(_ d: Data, _ o: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(d[d.startIndex + o + $1]) }
    }

    private static func be64(_ d: Data, _ o: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(d[d.startIndex + o + $1]) }
    }
}

/// Video oracle: decoded frames as small grey pictures, compared by mean absolute difference.
public enum VideoAnalysis {
    /// Every frame of the first video track, scaled to `width`×`height` grey.
    public static func greyFrames(_ path: String, width: Int = 64, height: Int = 48) async throws -> [[UInt8]] {
        let out = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-vf",
                                                    "scale=\(width):\(height),format=gray", "-f", "rawvideo", "-"])
        let size = width * height
        let bytes = [UInt8](out.stdout)
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<($0 + size)]) }
    }

    /// Mean absolute difference ×1000.
    public static func difference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard a.count == b.count, !a.isEmpty else { return Int.max }
        var total = 0
        for i in 0..<a.count { total += abs(Int(a[i]) - Int(b[i])) }
        return total * 1000 / a.count
    }

    /// Indices of output frames that match a neighbouring source frame better than their own
    /// position: any dropped, duplicated or reordered frame shows up here.
    public static func misplacedFrames(_ output: [[UInt8]], source: [[UInt8]]) async -> [Int] {
        await ExternalTool.computeOffPool { misplacedBlocking(output, source: source) }
    }

    private static func misplacedBlocking(_ output: [[UInt8]], source: [[UInt8]]) -> [Int] {
        var bad: [Int] = []
        for k in 0..<min(output.count, source.count) {
            let same = difference(output[k], source[k])
            for n in [k - 1, k + 1] where n >= 0 && n < source.count {
                if difference(output[k], source[n]) <= same { bad.append(k); break }
            }
        }
        return bad
    }
}
