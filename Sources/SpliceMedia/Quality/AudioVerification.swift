internal import CFFmpeg
import Foundation
import SpliceCore

/// Decodes one audio stream of a file to mono 32-bit float at a given rate, on demand (what the
/// audio checks compare; FFmpeg's decoders apply the container's priming trims, as a player does).
final class MonoAudioReader {
    let rate: Int
    private let demuxer: Demuxer
    private let stream: Int
    private let decoder: CodecContext
    private var resampler: Resampler?
    private let fifo = AudioFifo(format: AV_SAMPLE_FMT_FLT, channels: 1)
    private let packet = Packet()
    private let frame = Frame()
    private var ended = false

    init(location: String, stream: Int, rate: Int) throws(MediaError) {
        demuxer = try Demuxer(location: location)
        self.stream = stream
        self.rate = rate
        demuxer.discardAll(except: [stream])
        decoder = try CodecContext.decoder(for: demuxer.stream(stream), location: location, threads: 1)
    }

    /// The next `count` samples (fewer at the end).
    func read(_ count: Int) throws(MediaError) -> [Float] {
        while fifo.count < count && !ended { try fill() }
        let n = min(count, fifo.count)
        var samples = [Float](repeating: 0, count: n)
        if n > 0 { _ = samples.withUnsafeMutableBytes { fifo.read(into: $0.baseAddress!, count: n) } }
        return samples
    }

    private func fill() throws(MediaError) {
        guard try demuxer.read(into: packet) else {
            try decoder.decode(nil, into: frame, while: { true }) { f throws(MediaError) in try convert(f) }
            if let resampler { try resampler.convert(nil, count: 0, into: fifo) }
            ended = true
            return
        }
        guard Int(packet.streamIndex) == stream else { return }
        try decoder.decode(packet, into: frame, while: { true }) { f throws(MediaError) in try convert(f) }
    }

    private func convert(_ frame: Frame) throws(MediaError) {
        let f = frame.pointer.pointee
        if resampler == nil {
            resampler = try Resampler(from: (ChannelLayout(copying: f.ch_layout), AVSampleFormat(f.format), Int(f.sample_rate)),
                                      to: (ChannelLayout(defaultFor: 1), AV_SAMPLE_FMT_FLT, rate))
        }
        try frame.pointer.pointee.extended_data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 1) {
            data throws(MediaError) in
            _ = try resampler!.convert(data, count: Int(f.nb_samples), into: fifo)
        }
    }
}

/// The checks of one audio track of an output against its source: the sample count, where the
/// audio starts against the video, the cross-correlation lag at the start, at every join and at
/// the end (0: in place), and the SNR of the 1,024-sample blocks within two blocks of each join
/// against the track's median block SNR. Both tracks are decoded once, block by block, keeping
/// only the samples around the places checked.
struct AudioVerification {
    let thresholds: QualityThresholds

    /// What is compared.
    struct Input {
        var track: Int
        var source: String
        var sourceStream: Int
        /// Source samples (at the output's rate) before the output's first.
        var sourceSkip: Int64
        var output: String
        var outputStream: Int
        var rate: Int
        /// Samples the output should have; nil: what the source has after ``sourceSkip``.
        var expectedSamples: Int64?
        /// Samples per packet of the output's codec (AAC 1024; 1 for PCM): its last packet may
        /// carry padding the container does not trim, as every single-pass encode's does.
        var packetSamples: Int
        /// Where the audio starts against the video, output less source, ms.
        var avOffsetMilliseconds: Double
        /// Audio joins: the audio segment that starts there and its first output sample.
        var joins: [(segment: Int, sample: Int64)]
    }

    static let block = 1024
    /// Samples compared for a lag, and the largest lag looked for.
    static let window = 4096
    static let maxLag = 2048
    /// Blocks quieter than this (−60 dBFS RMS) say nothing about coding noise and are skipped.
    static let quietBlockPower = 1e-6

    func run(_ input: Input) throws(MediaError) -> (QualityReport.AudioTrackCheck, [QualityReport.Problem]) {
        let source = try MonoAudioReader(location: input.source, stream: input.sourceStream, rate: input.rate)
        let output = try MonoAudioReader(location: input.output, stream: input.outputStream, rate: input.rate)
        var skip = input.sourceSkip
        while skip > 0 {
            let n = try source.read(Int(min(skip, 65536))).count
            if n == 0 { break }
            skip -= Int64(n)
        }
        // The places checked, each with the samples around it as they stream past.
        let reach = Self.window / 2 + Self.maxLag
        var places: [(kind: String, segment: Int?, sample: Int64)] = [("start", nil, Int64(reach))]
        places += input.joins.map { ("join", $0.segment, $0.sample) }
        var windows = places.map { _ in (output: [Float](repeating: 0, count: 2 * reach), reference: [Float](repeating: 0, count: 2 * reach)) }
        var tail = (output: [Float](), reference: [Float]())
        var snr: [Double?] = []
        var outputCount: Int64 = 0, sourceCount: Int64 = 0
        while true {
            let out = try output.read(Self.block), ref = try source.read(Self.block)
            if out.isEmpty && (ref.isEmpty || input.expectedSamples != nil) { break }
            let base = Int64(snr.count) * Int64(Self.block)
            outputCount += Int64(out.count)
            sourceCount += Int64(ref.count)
            let common = min(out.count, ref.count)
            var power = 0.0, noise = 0.0
            for i in 0..<common {
                let r = Double(ref[i]), d = Double(out[i]) - r
                power += r * r
                noise += d * d
            }
            let full = common == Self.block && power / Double(common) >= Self.quietBlockPower
            snr.append(full ? 10 * log10(power / max(noise, 1e-20)) : nil)
            for (p, place) in places.enumerated() {
                let start = place.sample - Int64(reach)
                for i in 0..<common {
                    let at = Int(base + Int64(i) - start)
                    if at >= 0 && at < 2 * reach {
                        windows[p].output[at] = out[i]
                        windows[p].reference[at] = ref[i]
                    }
                }
            }
            tail.output = Array((tail.output + out.prefix(common)).suffix(2 * reach))
            tail.reference = Array((tail.reference + ref.prefix(common)).suffix(2 * reach))
        }
        let valid = snr.compactMap { $0 }.sorted()
        let median = valid.isEmpty ? 0 : valid[valid.count / 2]
        var problems: [QualityReport.Problem] = []
        var points: [QualityReport.AudioPoint] = []
        let ms = { (sample: Int64) in sample * 1000 / Int64(input.rate) }
        let name = "audio track \(input.track + 1)"
        let lengths = min(outputCount, sourceCount)
        for (p, place) in places.enumerated() where place.sample + Int64(reach) <= lengths {
            let lag = Self.lag(windows[p].output, against: windows[p].reference)
            var drop: Double?
            if place.kind == "join" {
                let first = Int(place.sample / Int64(Self.block))
                let near = (max(0, first - 2)...min(snr.count - 1, first + 2)).compactMap { snr[$0] }
                drop = near.min().map { ((median - $0) * 100).rounded() / 100 }
            }
            let passed = lag == 0 && (drop ?? 0) <= thresholds.maxAudioJoinDrop
            points.append(.init(kind: place.kind, segment: place.segment, sample: place.sample,
                                timeMilliseconds: ms(place.sample), lag: lag, drop: drop, passed: passed))
            let at = ms(place.sample).clock
            if lag != 0 {
                problems.append(.init(kind: "audio-lag", segment: place.segment, timeMilliseconds: ms(place.sample),
                                      message: "\(name) at \(at) (\(place.kind == "join" ? "join, segment \(place.segment ?? 0) starts" : place.kind)): "
                                          + "shifted by \(lag) samples against the source"))
            }
            if let drop, drop > thresholds.maxAudioJoinDrop {
                problems.append(.init(kind: "audio-join", segment: place.segment, timeMilliseconds: ms(place.sample),
                                      message: "\(name) at the join \(at) (segment \(place.segment ?? 0) starts): a block "
                                          + "\(String(format: "%.2f", drop)) dB under the median block SNR (--max-audio-join-drop "
                                          + "\(thresholds.maxAudioJoinDrop))"))
            }
        }
        if tail.output.count == 2 * reach {
            let lag = Self.lag(tail.output, against: tail.reference)
            let sample = lengths - Int64(reach)
            points.append(.init(kind: "end", segment: nil, sample: sample, timeMilliseconds: ms(sample), lag: lag, drop: nil,
                                passed: lag == 0))
            if lag != 0 {
                problems.append(.init(kind: "audio-lag", segment: nil, timeMilliseconds: ms(sample),
                                      message: "\(name) at its end (\(ms(sample).clock)): shifted by \(lag) samples against the source"))
            }
        }
        let expected = input.expectedSamples ?? sourceCount
        // Resampling may round the count by a sample either way; the last packet may be padded.
        let slack: Int64 = 2
        var countPassed = outputCount >= expected - slack && outputCount <= expected + Int64(max(1, input.packetSamples) - 1) + slack
        if !countPassed {
            problems.append(.init(kind: "audio-samples", segment: nil, timeMilliseconds: nil,
                                  message: "\(name) decodes to \(outputCount) samples where the source has \(expected) "
                                      + "(\(outputCount > expected ? "+" : "")\(outputCount - expected); at most its last packet's "
                                      + "\(max(1, input.packetSamples) - 1) samples of padding may follow)"))
        }
        if abs(input.avOffsetMilliseconds) > thresholds.maxAVOffsetMilliseconds {
            countPassed = false
            problems.append(.init(kind: "av-offset", segment: nil, timeMilliseconds: 0,
                                  message: "\(name) starts \(String(format: "%+.3f", input.avOffsetMilliseconds)) ms off "
                                      + "where the source's starts against its video (--max-av-offset-ms "
                                      + "\(thresholds.maxAVOffsetMilliseconds))"))
        }
        let check = QualityReport.AudioTrackCheck(
            track: input.track, sampleRate: input.rate, expectedSamples: expected, outputSamples: outputCount,
            avOffsetMilliseconds: (input.avOffsetMilliseconds * 1000).rounded() / 1000,
            medianBlockSNR: (median * 100).rounded() / 100, points: points,
            passed: countPassed && points.allSatisfy(\.passed))
        return (check, problems)
    }

    /// The lag (samples, within ±``maxLag``) at which `signal` best matches `reference` over the
    /// middle ``window`` samples: normalised cross-correlation of their first differences (which
    /// whitens low tones, whose broad peak coding noise could otherwise tip by a sample). Silence
    /// says nothing: 0.
    static func lag(_ signal: [Float], against reference: [Float]) -> Int {
        func differences(_ x: [Float]) -> [Float] {
            var d = [Float](repeating: 0, count: x.count)
            for i in 1..<x.count { d[i] = x[i] - x[i - 1] }
            return d
        }
        let s = differences(signal), r = differences(reference)
        let start = maxLag, end = start + window
        var referenceEnergy = 0.0
        for i in start..<end { referenceEnergy += Double(r[i]) * Double(r[i]) }
        guard referenceEnergy > 1e-9 else { return 0 }
        func score(_ lag: Int) -> Double {
            var dot = 0.0, energy = 0.0
            for i in start..<end {
                let v = Double(s[i + lag])
                dot += v * Double(r[i])
                energy += v * v
            }
            return energy > 0 ? dot / (energy * referenceEnergy).squareRoot() : -1
        }
        var best = 0, bestScore = -Double.infinity
        for lag in -maxLag...maxLag {
            let value = score(lag)
            if value > bestScore {
                bestScore = value
                best = lag
            }
        }
        // Periodic sound (a held tone) matches itself a period away as well as in place: only a
        // lag that matches clearly better than none counts.
        if best != 0 && score(0) >= 0.9 * bestScore { return 0 }
        return best
    }
}
