internal import CFFmpeg
public import Foundation
public import SpliceCore

/// `splice verify SOURCE OUTPUT`: an independent check of a finished output against its source,
/// whoever made it. The source is decoded and fitted exactly as Splice's encode fits it — the
/// same ``VideoConverter`` (scaled into the output's size, padded, turned upright, tone mapped
/// when an HDR source became SDR), from the range's start, onto the constant frame-rate grid when
/// one is given — and each output frame is paired with the source frame at its presentation time
/// and scored by FFmpeg's `psnr` and `ssim` filters. Frames without a partner are missing or extra;
/// a run of frames that shows a neighbouring source picture better than its own is a picture
/// repeated or dropped with the timestamps kept. Segments are the job's (from its plan) or,
/// without one, the output's keyframes; joins and audio are judged as a verified job's are.
public struct OutputVerifier: Sendable {
    /// What to compare and how the output was made from the source.
    public struct Options: Sendable {
        public var source: String
        public var output: String
        /// The part of the source the output was made from (nil: all of it).
        public var range: MediaTimeRange?
        /// The output's constant frame rate, when it was made with one (`--frame-rate`).
        public var frameRate: Rational?
        /// The job's plan, for its segments and joins (its range and frame rate when those are not given).
        public var plan: SegmentPlan?
        public var thresholds: QualityThresholds
        /// Threads for the decoders and filters (0: FFmpeg chooses).
        public var threads: Int

        public init(source: String, output: String, range: MediaTimeRange? = nil, frameRate: Rational? = nil,
                    plan: SegmentPlan? = nil, thresholds: QualityThresholds = QualityThresholds(), threads: Int = 0) {
            self.source = source
            self.output = output
            self.range = range
            self.frameRate = frameRate
            self.plan = plan
            self.thresholds = thresholds
            self.threads = threads
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Runs every check. Throws only when the files cannot be compared at all (missing, no
    /// video, an output that is not a picture of the source's).
    public func run() async throws -> QualityReport {
        let options = self.options
        return try await BlockingThread.run("splice.verify") { try VerifyRun(options: options).run() }
    }
}

/// Pictures of one video track decoded in presentation order, with their times (asset time for
/// a source, the stream's own clock for an output), each a reference to the decoder's buffer.
private final class DecodedPictures {
    private let demuxer: Demuxer
    private let stream: Int
    private let decoder: CodecContext
    private let timeBase: Rational
    private let origin: MediaTime
    private let packet = Packet()
    private let frame = Frame()
    private var ready: [(time: MediaTime, pts: Int64, picture: Frame, key: Bool)] = []
    private var drained = false

    init(demuxer: Demuxer, stream: Int, origin: MediaTime, threads: Int) throws(MediaError) {
        self.demuxer = demuxer
        self.stream = stream
        self.origin = origin
        timeBase = Rational(demuxer.stream(stream).pointee.time_base)
        demuxer.discardAll(except: [stream])
        decoder = try CodecContext.decoder(for: demuxer.stream(stream), location: demuxer.location, threads: threads)
    }

    /// Seeks to the keyframe at or before `time` (asset time).
    func seek(to time: MediaTime) throws(MediaError) {
        try demuxer.seek(stream: stream, to: (time + origin).value(in: timeBase, rounding: .down))
    }

    func next() throws(MediaError) -> (time: MediaTime, pts: Int64, picture: Frame, key: Bool)? {
        while ready.isEmpty && !drained {
            if try demuxer.read(into: packet) {
                guard Int(packet.streamIndex) == stream else { continue }
                try decoder.decode(packet, into: frame, while: { true }) { f throws(MediaError) in try keep(f) }
            } else {
                try decoder.decode(nil, into: frame, while: { true }) { f throws(MediaError) in try keep(f) }
                drained = true
            }
        }
        return ready.isEmpty ? nil : ready.removeFirst()
    }

    private func keep(_ frame: Frame) throws(MediaError) {
        let ts = frame.bestEffortTimestamp
        guard ts != FFmpeg.noPTS else { return }
        guard let clone = av_frame_clone(frame.pointer) else { throw MediaError(.internalError, "out of memory") }
        let key = frame.pointer.pointee.key_frame != 0 || frame.pointer.pointee.pict_type == AV_PICTURE_TYPE_I
        ready.append((MediaTime(value: ts, timeBase: timeBase) - origin, ts, Frame(owning: clone), key))
    }
}

/// The source's pictures as the encode saw them: from the range, fitted, on the frame-rate grid.
private final class ReferencePictures {
    private let pictures: DecodedPictures
    private let converter: VideoConverter
    private let start: MediaTime
    private let end: MediaTime?
    private let rate: Rational?
    private var held: Frame?
    private var nextSlot: Int64 = 0
    private var queue: [(time: MediaTime, picture: Frame)] = []
    private var finished = false

    init(pictures: DecodedPictures, converter: VideoConverter, start: MediaTime, end: MediaTime?, rate: Rational?) {
        self.pictures = pictures
        self.converter = converter
        self.start = start
        self.end = end
        self.rate = rate
    }

    /// The next reference picture and its output time.
    func next() throws(MediaError) -> (time: MediaTime, picture: Frame)? {
        while queue.isEmpty && !finished {
            guard let decoded = try pictures.next() else {
                finish()
                break
            }
            if decoded.time < start { continue }
            if let end, decoded.time >= end {
                finish()
                break
            }
            let converted = try converter.convert(decoded.picture)
            guard let clone = av_frame_clone(converted.pointer) else { throw MediaError(.internalError, "out of memory") }
            let picture = Frame(owning: clone)
            let relative = decoded.time - start
            guard let rate else {
                queue.append((relative, picture))
                continue
            }
            // A constant rate: each picture fills the slots up to the next one's (as the encode does).
            let slotBase = Rational(rate.denominator, rate.numerator)
            let slot = relative.value(in: slotBase, rounding: .nearest)
            emitHeld(upTo: slot, base: slotBase)
            held = picture
            nextSlot = max(nextSlot, slot)
        }
        return queue.isEmpty ? nil : queue.removeFirst()
    }

    private func emitHeld(upTo slot: Int64, base: Rational) {
        guard let held else { return }
        while nextSlot < slot {
            queue.append((MediaTime(value: nextSlot, timeBase: base), held))
            nextSlot += 1
        }
    }

    private func finish() {
        finished = true
        guard let rate, held != nil else { return }
        let base = Rational(rate.denominator, rate.numerator)
        let endSlot = end.map { ($0 - start).value(in: base, rounding: .nearest) } ?? (nextSlot + 1)
        emitHeld(upTo: max(endSlot, nextSlot + 1), base: base)
        held = nil
    }
}

/// One verification, on a blocking thread.
private struct VerifyRun {
    let options: OutputVerifier.Options

    func run() throws(MediaError) -> QualityReport {
        _ = FFmpeg.setUp
        let plan = options.plan
        let source = try Asset(probing: options.source)
        let output = try Asset(probing: options.output)
        guard let sourceVideo = source.videoTrack else {
            throw MediaError(.noUsableTrack, "'\(options.source)' has no video track to compare with")
        }
        guard let outputVideo = output.videoTrack, let width = outputVideo.width, let height = outputVideo.height else {
            throw MediaError(.noUsableTrack, "'\(options.output)' has no video track to verify")
        }
        guard outputVideo.rotation == 0 else {
            throw MediaError(.invalidSettings, "'\(options.output)' is turned by a display matrix (\(outputVideo.rotation)°); "
                             + "only upright outputs (as Splice writes them) can be compared")
        }
        let start = options.range?.start ?? plan?.outputZero ?? .zero
        let end = options.range?.end ?? plan?.outputEnd
        let rate = options.frameRate ?? plan?.videoSettings?.frameRate

        // The source fitted as the encode fits it: the output's size and pixel format, the same
        // converter (aspect fit, padding, rotation, tone mapping).
        let codec = VideoSettings.Codec(rawValue: outputVideo.codecName) ?? .h264
        let settings = VideoSettings(codec: codec == .prores ? .h264 : codec, width: width, height: height,
                                     frameRate: rate, pixelFormat: outputVideo.pixelFormat,
                                     toneMap: sourceVideo.isHDR && !outputVideo.isHDR ? true : nil)
        var notices: [String] = []
        let encoding: VideoEncoding
        do {
            encoding = try VideoEncoding.resolve(settings, source: sourceVideo, fileType: nil, threads: 1, notices: &notices)
        } catch {
            throw MediaError(.invalidSettings, "cannot fit '\(options.source)' to '\(options.output)' "
                             + "(\(width)x\(height) \(outputVideo.pixelFormat ?? "?")): \(error)")
        }
        let sourceDemuxer = try Demuxer(location: options.source)
        let sourcePictures = try DecodedPictures(demuxer: sourceDemuxer, stream: sourceVideo.id, origin: source.origin,
                                                 threads: options.threads)
        if start > .zero { try sourcePictures.seek(to: start) }
        let references = ReferencePictures(pictures: sourcePictures, converter: VideoConverter(encoding: encoding),
                                           start: start, end: end, rate: rate)
        let outputDemuxer = try Demuxer(location: options.output)
        let outputStream = outputDemuxer.stream(outputVideo.id)
        let outputTimeBase = Rational(outputStream.pointee.time_base)
        let outputPictures = try DecodedPictures(demuxer: outputDemuxer, stream: outputVideo.id, origin: .zero,
                                                 threads: options.threads)
        let format = AVPixelFormat(outputStream.pointee.codecpar.pointee.format)
        guard av_get_pix_fmt(encoding.pixelFormat) == format else {
            throw MediaError(.invalidSettings, "'\(options.output)' decodes to a pixel format Splice cannot fit the source to")
        }
        let graph = try QualityFilterGraph(width: width, height: height, pixelFormat: format.rawValue,
                                           timeBase: outputTimeBase, threads: options.threads)
        let depth = Int(av_pix_fmt_desc_get(format)?.pointee.comp.0.depth ?? 8)
        var series = QualitySeries(timeBase: outputTimeBase, peak: (1 << depth) - 1)
        var shifts = ShiftDetector(depth: depth)

        // Pair the two by time: within a quarter of the source's frame interval (a container's
        // coarser clock rounds, a missing or extra frame is a whole interval away).
        let interval = rate.map { Rational($0.denominator, $0.numerator) }.map { MediaTime(value: 1, timeBase: $0) }
            ?? sourceVideo.frameRate.map { MediaTime(value: Int64($0.denominator), timescale: $0.numerator) }
            ?? MediaTime(value: 1, timescale: 30)
        let tolerance = interval.scaled(by: 1, 4)
        var missing: [Int64] = [], extra: [Int64] = [], keyframes: [MediaTime] = []
        var expected = 0, outputCount = 0
        var reference = try references.next()
        var picture = try outputPictures.next()
        if reference != nil { expected += 1 }
        if let picture { outputCount += 1; if picture.key { keyframes.append(picture.time) } }
        while let ref = reference, let out = picture {
            if out.time < ref.time - tolerance {
                extra.append(out.time.milliseconds)
            } else if out.time > ref.time + tolerance {
                missing.append(ref.time.milliseconds)
                reference = try references.next()
                if reference != nil { expected += 1 }
                continue
            } else {
                guard Int(out.picture.pointer.pointee.width) == width, Int(out.picture.pointer.pointee.height) == height else {
                    throw MediaError(.invalidSettings, "'\(options.output)' changes its picture size mid-stream")
                }
                shifts.add(output: out.picture, reference: ref.picture, time: out.time)
                for score in try graph.push(distorted: out.picture, reference: ref.picture, pts: out.pts) {
                    series.append(pts: score.pts, mseY: score.mseY, mse: score.mse, ssimY: score.ssimY, ssim: score.ssim)
                }
                reference = try references.next()
                if reference != nil { expected += 1 }
            }
            picture = try outputPictures.next()
            if let picture { outputCount += 1; if picture.key { keyframes.append(picture.time) } }
        }
        while let ref = reference {
            missing.append(ref.time.milliseconds)
            reference = try references.next()
            if reference != nil { expected += 1 }
        }
        while let out = picture {
            extra.append(out.time.milliseconds)
            picture = try outputPictures.next()
            if let picture { outputCount += 1; if picture.key { keyframes.append(picture.time) } }
        }
        for score in try graph.finish() {
            series.append(pts: score.pts, mseY: score.mseY, mse: score.mse, ssimY: score.ssimY, ssim: score.ssim)
        }
        let frames = QualityReport.FrameCheck(expected: expected, output: outputCount, missing: missing, extra: extra,
                                              shifted: shifts.finish())

        // Segments: the plan's, else one per output keyframe.
        let boundaries: [QualityAssessment.Boundary]
        if let plan {
            boundaries = plan.videoSegments.map { .init(segment: $0.index, start: ($0.videoStart ?? plan.outputZero) - plan.outputZero) }
        } else {
            boundaries = (keyframes.isEmpty ? [.zero] : keyframes).enumerated().map { .init(segment: $0.offset, start: $0.element) }
        }
        let assessment = QualityAssessment(thresholds: options.thresholds)
        let (entries, segmentProblems) = assessment.segments(series, boundaries: boundaries)
        let (joins, joinProblems) = assessment.joins(series, boundaries: boundaries)
        var problems = QualityAssessment.frameProblems(frames, boundaries: boundaries) + segmentProblems + joinProblems
        let (audio, audioProblems) = try checkAudio(source: source, output: output, start: start, end: end)
        problems += audioProblems
        return QualityReport(source: options.source, output: options.output, thresholds: options.thresholds,
                             segmentsFrom: plan == nil ? "keyframes" : "plan", overall: series.summary(), frames: frames,
                             segments: entries, videoJoins: joins, audio: audio, problems: problems, series: series)
    }

    /// Each output audio track against its source track (the plan's, else the source's audio
    /// tracks in order).
    private func checkAudio(source: Asset, output: Asset, start: MediaTime, end: MediaTime?) throws(MediaError)
        -> ([QualityReport.AudioTrackCheck], [QualityReport.Problem]) {
        let outputAudio = output.tracks.filter { $0.kind == .audio }
        let sourceAudio = source.tracks.filter { $0.kind == .audio }
        guard !outputAudio.isEmpty else { return ([], []) }
        let demuxer = try Demuxer(location: options.output)
        var checks: [QualityReport.AudioTrackCheck] = []
        var problems: [QualityReport.Problem] = []
        for (t, track) in outputAudio.enumerated() {
            let planned = options.plan.flatMap { $0.audioTracks.indices.contains(t) ? $0.audioTracks[t] : nil }
            guard let sourceTrack = planned.flatMap({ source.track($0.source) }) ?? (sourceAudio.indices.contains(t) ? sourceAudio[t] : nil),
                  let rate = track.sampleRate, let audioStart = sourceTrack.startTime else { continue }
            let unit = MediaTime(value: 1, timescale: Int32(rate))
            let skip = max(0, (start - audioStart).count(of: unit, rounding: .nearest))
            let expected = end.map { e in (e - MediaTime.max(start, audioStart)).count(of: unit, rounding: .nearest) }
            let joins = options.plan.map { plan in
                plan.audioSegments(track: t).dropFirst().compactMap { spec in spec.audio?.keepStart.map { (segment: spec.index, sample: $0) } }
            } ?? []
            let frameSize = Int(demuxer.stream(track.id).pointee.codecpar.pointee.frame_size)
            let (check, found) = try AudioVerification(thresholds: options.thresholds).run(.init(
                track: t, source: options.source, sourceStream: sourceTrack.id, sourceSkip: skip, output: options.output,
                outputStream: track.id, rate: rate, expectedSamples: expected, packetSamples: max(1, frameSize),
                avOffsetMilliseconds: StitchVerification.avOffset(source: source, sourceAudio: sourceTrack, output: output,
                                                                  outputAudio: track, zero: start),
                joins: Array(joins)))
            checks.append(check)
            problems += found
        }
        return (checks, problems)
    }
}

/// Finds runs of output frames that show a neighbouring source picture instead of their own (a
/// picture repeated or dropped while the timestamps were kept). Each pair is compared on a
/// quarter of its luma samples; a frame whose error jumps well above the recent median is also
/// compared with the source's previous and next pictures, one frame later.
private struct ShiftDetector {
    let depth: Int
    private var recent: [Double] = []
    private var previousReference: Frame?
    /// The pair waiting for its next reference: output, own reference, time, its error.
    private var pending: (output: Frame, reference: Frame, time: MediaTime, error: Double, previous: Frame?)?
    private var runs: [QualityReport.FrameCheck.Shift] = []
    private var lastShift: (offset: Int, time: MediaTime)?

    init(depth: Int) {
        self.depth = depth
    }

    mutating func add(output: Frame, reference: Frame, time: MediaTime) {
        if let pending { judge(pending, next: reference) }
        let error = Self.lumaError(output, reference, depth: depth)
        pending = (output, reference, time, error, previousReference)
        previousReference = reference
    }

    mutating func finish() -> [QualityReport.FrameCheck.Shift] {
        if let pending { judge(pending, next: nil) }
        pending = nil
        return runs
    }

    private mutating func judge(_ pair: (output: Frame, reference: Frame, time: MediaTime, error: Double, previous: Frame?),
                                next: Frame?) {
        defer {
            recent.append(pair.error)
            if recent.count > 24 { recent.removeFirst() }
        }
        let sorted = recent.sorted()
        let median = sorted.isEmpty ? pair.error : sorted[sorted.count / 2]
        guard pair.error > max(4 * median, 1) else {
            lastShift = nil
            return
        }
        let candidates: [(Int, Frame?)] = [(-1, pair.previous), (1, next)]
        let best = candidates.compactMap { offset, frame in frame.map { (offset, Self.lumaError(pair.output, $0, depth: depth)) } }
            .min { $0.1 < $1.1 }
        guard let (offset, error) = best, error * 4 < pair.error else {
            lastShift = nil
            return
        }
        if let last = lastShift, last.offset == offset, let i = runs.indices.last {
            runs[i].frames += 1
        } else {
            runs.append(.init(timeMilliseconds: pair.time.milliseconds, offset: offset, frames: 1))
        }
        lastShift = (offset, pair.time)
    }

    /// Mean squared luma error of every other sample of every other row.
    static func lumaError(_ a: Frame, _ b: Frame, depth: Int) -> Double {
        let width = Int(a.pointer.pointee.width), height = Int(a.pointer.pointee.height)
        guard width == Int(b.pointer.pointee.width), height == Int(b.pointer.pointee.height),
              let pa = a.pointer.pointee.data.0, let pb = b.pointer.pointee.data.0 else { return .infinity }
        let sa = Int(a.pointer.pointee.linesize.0), sb = Int(b.pointer.pointee.linesize.0)
        var sum = 0.0, count = 0
        for y in stride(from: 0, to: height, by: 2) {
            if depth > 8 {
                let ra = UnsafeRawPointer(pa + y * sa).assumingMemoryBound(to: UInt16.self)
                let rb = UnsafeRawPointer(pb + y * sb).assumingMemoryBound(to: UInt16.self)
                for x in stride(from: 0, to: width, by: 2) {
                    let d = Double(Int(ra[x]) - Int(rb[x]))
                    sum += d * d
                }
            } else {
                let ra = pa + y * sa, rb = pb + y * sb
                var row = 0
                for x in stride(from: 0, to: width, by: 2) {
                    let d = Int(ra[x]) - Int(rb[x])
                    row += d * d
                }
                sum += Double(row)
            }
            count += (width + 1) / 2
        }
        return count > 0 ? sum / Double(count) : 0
    }
}
