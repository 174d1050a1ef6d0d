internal import CFFmpeg
public import Foundation
public import SpliceCore

/// What a stitch wrote.
public struct StitchSummary: Sendable, Codable, Hashable {
    public var videoFrames: Int
    /// Audio packets written, over every audio track.
    public var audioPackets: Int
    public var bytes: Int64
    /// With a peak rate (`--max-bitrate`, `--buffer-size`): the lowest level of the decoder buffer
    /// over the stitched video, in percent of its size (``VideoBufferModel``, starting as the
    /// segments' encoders assumed), and the decode time at which it first ran dry, if it did.
    public var videoBufferLowestPercent: Int?
    public var videoBufferUnderflow: MediaTime?
    /// A verified job's checks (``StitchVerification``; in a cluster, without every frame's figures).
    public var quality: QualityReport?
}

/// Joins the segment files of a ``SegmentPlan`` into one output file at the packet level — no
/// re-encode — so the result plays like a single-pass encode, and carries over what the plan
/// takes straight from the source.
///
/// - Video: packets keep their presentation times (the source's steps); decode times are rebuilt
///   for the whole file as `dts[k] = pts_sorted[k − d]`, where d is the largest reordering depth
///   of any segment, so they rise strictly and never pass a presentation time.
/// - Audio, per track: each segment contributes exactly the packets whose pts fall in its keep
///   range: the first keeps its priming packets, later ones drop their priming and pre-roll, the
///   last its trimmed final packet. Kept packets must continue the grid with no gap or overlap.
///   The muxer turns the first packet's −P into the single edit list that hides the priming.
/// - From the source, not segmented: copied video and audio (bit for bit, their own priming and
///   edit lists), subtitles (converted where the container needs it), data and timed metadata,
///   chapters, the timecode, and annotations.
/// - Refuses segments from another plan, missing or duplicate segments, damaged files, checksum
///   mismatches and codec parameters that differ from the first segment's of the same track.
public struct Stitcher: Sendable {
    public let plan: SegmentPlan

    public init(plan: SegmentPlan) {
        self.plan = plan
    }

    /// Stitches `segments` (segment index → file) into `output`. With `checksums`, each file's
    /// SHA-256 must match. The output appears only on success. Without `overwrite`, a file
    /// already at `output` is an error (``MediaError/Code/outputExists``), checked before any
    /// segment is read and again when the finished file is moved into place; a segment file is
    /// never replaced, nor the source (``OutputDestination``).
    public func stitch(segments: [Int: String], checksums: [Int: SHA256Digest] = [:], to output: URL,
                       overwrite: Bool = false) async throws -> StitchSummary {
        try await stitch(segments: segments, checksums: checksums, to: output.path, overwrite: overwrite)
    }

    /// ``stitch(segments:checksums:to:overwrite:)`` to `output`, a path or a location in storage
    /// (`s3://…`: streamed into an upload as it is written, or uploaded once finished when it
    /// is rewritten at the end; ``Muxer``). Cancelling the calling task stops the stitch; the
    /// partial output is removed (an upload aborted).
    public func stitch(segments: [Int: String], checksums: [Int: SHA256Digest] = [:], to output: String,
                       overwrite: Bool = false) async throws -> StitchSummary {
        let plan = self.plan
        let cancelled = CancelFlag()
        return try await withTaskCancellationHandler {
            try await BlockingThread.run("splice.stitch") {
                try StitchRun(plan: plan, segments: segments, checksums: checksums, destination: output,
                              overwrite: overwrite, cancelled: cancelled).run()
            }
        } onCancel: {
            cancelled.set()
        }
    }
}

/// One stitch, on a blocking thread.
private struct StitchRun {
    let plan: SegmentPlan
    let segments: [Int: String]
    let checksums: [Int: SHA256Digest]
    let destination: String
    let overwrite: Bool
    /// Polled between packets; set, it also makes the muxer's finish leave nothing behind.
    let cancelled: CancelFlag

    func run() throws(MediaError) -> StitchSummary {
        _ = FFmpeg.setUp
        try OutputDestination.check(output: destination, inputs: segments.keys.sorted().map { segments[$0]! } + [plan.source],
                                    overwrite: overwrite)
        guard plan.package == nil else {
            throw MediaError(.invalidSettings, "plan \(plan.id) makes a streaming package, not one file; package it instead")
        }
        try checkComplete(plan: plan, segments: segments)

        // Pass 1: headers and trailers — check they belong together, collect video timestamps.
        let videoSpecs = plan.videoSegments
        var video: VideoUnits?
        if !videoSpecs.isEmpty { video = try VideoUnits(plan: plan, specs: videoSpecs, files: segments) }
        if let video, let settings = plan.videoSettings, let peak = settings.maxBitrate, let size = settings.bufferSize {
            video.buffer = VideoBufferModel(maxBitrate: peak, bufferSize: size, initialPercent: RateControl.segmentBufferFillPercent)
        }
        var audioUnits: [Int: AudioUnits] = [:]
        for (t, track) in plan.audioTracks.enumerated() where !track.copies {
            audioUnits[t] = try AudioUnits(plan: plan, track: t, specs: plan.audioSegments(track: t), files: segments,
                                           checksums: checksums)
        }
        if let video { video.checksums = checksums }

        // The output: streams in order — video, audio tracks, then what rides along. The source
        // is read only for what the plan takes from it.
        let source = plan.passThrough.isEmpty ? nil : try Demuxer(location: plan.source)
        let origin = source?.origin ?? .zero
        // Finished MP4/MOV files are rewritten for faststart and for timed-metadata tracks.
        let rewrites = plan.outputFileType.isQuickTime && (plan.optimizesForNetworkUse || !plan.annotations.isEmpty
            || plan.passThrough.contains { $0.kind == .timedMetadata })
        let muxer = try Muxer(destination: destination, formatName: plan.outputFileType.muxerName, replacing: overwrite,
                              rewritesFile: rewrites, cancellation: cancelled)
        let window = ExportPlan.Window(start: plan.outputZero, end: plan.outputEnd)
        let copyPlan = ExportPlan(location: plan.source, origin: origin, destination: destination,
                                  output: .file(muxerName: plan.outputFileType.muxerName,
                                                isQuickTime: plan.outputFileType.isQuickTime, replacing: overwrite),
                                  videoWindow: window, outputZero: plan.outputZero, fastStart: false, metadata: [:],
                                  codecThreads: 1, notices: [])
        var feeds: [any StitchFeed] = []
        var avCopies: [any TrackPath] = []
        var riders: [any TrackPath] = []
        var collectors: [TimedMetadataPath] = []
        var videoOutput: Int?
        var pictureSize: (width: Int, height: Int)?
        if let video {
            let out = try video.addStream(to: muxer)
            videoOutput = out
            if let description = plan.videoDescription { muxer.describe(stream: out, as: description) }
            plan.videoHDR?.attach(to: muxer.context.pointee.streams[out]!)
            pictureSize = (Int(video.reference.width), Int(video.reference.height))
            feeds.append(video)
        } else if let source, let copied = plan.passThrough.first(where: { $0.kind == .video }) {
            avCopies.append(try CopyPath(plan: copyPlan, demuxer: source, streamIndex: copied.source, muxer: muxer))
            videoOutput = muxer.streamCount - 1
            let par = source.stream(copied.source).pointee.codecpar.pointee
            pictureSize = (Int(par.width), Int(par.height))
        }
        for (t, track) in plan.audioTracks.enumerated() {
            if let units = audioUnits[t] {
                let out = try units.addStream(to: muxer)
                muxer.describe(stream: out, as: track.description)
                feeds.append(units)
            } else if let source {
                avCopies.append(try CopyPath(plan: copyPlan, demuxer: source, streamIndex: track.source, muxer: muxer))
            }
        }
        let riderDemuxer = plan.passThrough.contains { [.subtitle, .data, .timedMetadata].contains($0.kind) }
            ? try Demuxer(location: plan.source) : nil
        if let riderDemuxer {
            let infos = plan.passThrough.contains { $0.kind == .timedMetadata } ? QuickTimeTrackInfo.read(location: plan.source) : nil
            for p in plan.passThrough {
                switch p.kind {
                case .video, .audio: continue
                case .subtitle:
                    if let target = p.convertTo {
                        riders.append(try SubtitleConvertPath(plan: copyPlan, demuxer: riderDemuxer, streamIndex: p.source,
                                                              targetCodec: target, muxer: muxer, pictureSize: pictureSize))
                    } else {
                        riders.append(try CopyPath(plan: copyPlan, demuxer: riderDemuxer, streamIndex: p.source, muxer: muxer))
                    }
                case .data:
                    riders.append(try CopyPath(plan: copyPlan, demuxer: riderDemuxer, streamIndex: p.source, muxer: muxer))
                case .timedMetadata:
                    let id = Int(riderDemuxer.stream(p.source).pointee.id)
                    guard let info = infos?.first(where: { $0.trackID == id }) else { continue }
                    let path = TimedMetadataPath(plan: copyPlan, demuxer: riderDemuxer, streamIndex: p.source, info: info)
                    collectors.append(path)
                    riders.append(path)
                }
            }
        }
        if let videoOutput, let tc = plan.timecode {
            av_dict_set(&muxer.context.pointee.streams[videoOutput]!.pointee.metadata, "timecode", tc, 0)
        }
        if let source, !avCopies.isEmpty {
            feeds.append(try SourceFeed(demuxer: source, paths: avCopies, plan: copyPlan, seekingFor: plan.passThrough))
        }
        if let riderDemuxer, !riders.isEmpty {
            feeds.append(try SourceFeed(demuxer: riderDemuxer, paths: riders, plan: copyPlan, seekingFor: []))
        }

        muxer.setChapters(plan.chapters)
        let appends = plan.outputFileType.isQuickTime && (!collectors.isEmpty || !plan.annotations.isEmpty)
        var options: [String: String] = [:]
        if plan.outputFileType.isQuickTime {
            options = muxer.quickTimeOptions(fastStart: plan.optimizesForNetworkUse && !appends,
                                             customTags: !plan.metadata.isEmpty)
        }
        try muxer.writeHeader(metadata: plan.metadata, options: options)

        // Pass 2: every feed's packets, merged in output time.
        while true {
            var best: (index: Int, time: MediaTime)?
            for (i, feed) in feeds.enumerated() {
                guard let t = try feed.peekTime() else { continue }
                if best == nil || t < best!.time { best = (i, t) }
            }
            guard let best else { break }
            try feeds[best.index].emit(into: muxer)
            if cancelled.isSet { throw MediaError.cancelled("the stitch into '\(destination)'") }
        }
        for path in avCopies + riders { try path.finish { () throws(MediaError) in } }
        if appends {
            var extra = collectors.map(\.track)
            if !plan.annotations.isEmpty {
                extra.append(TimedAnnotation.track(plan.annotations, zero: plan.outputZero, end: plan.outputEnd))
            }
            try muxer.finish(appending: extra, isQuickTimeMovie: plan.outputFileType == .mov,
                             fastStart: plan.optimizesForNetworkUse)
        } else {
            try muxer.finish()
        }
        let bytes = muxer.bytesWritten
        let audioPackets = audioUnits.values.reduce(0) { $0 + $1.kept }
            + avCopies.compactMap { ($0 as? CopyPath).flatMap { $0.isAudio ? $0.packetsWritten : nil } }.reduce(0, +)
        let videoFrames = video?.written
            ?? avCopies.compactMap { ($0 as? CopyPath).flatMap { $0.isVideo ? $0.packetsWritten : nil } }.first ?? 0
        var summary = StitchSummary(videoFrames: videoFrames, audioPackets: audioPackets, bytes: bytes)
        if let buffer = video?.buffer {
            summary.videoBufferLowestPercent = Int(buffer.lowestPermille >= 0 ? buffer.lowestPermille / 10
                                                   : -((-buffer.lowestPermille + 9) / 10))
            summary.videoBufferUnderflow = buffer.firstUnderflow.map { $0 - plan.outputZero }
        }
        return summary
    }

}

/// Refuses a set of segment files that misses one of the plan's segments or has a stranger.
func checkComplete(plan: SegmentPlan, segments: [Int: String]) throws(MediaError) {
    let order = plan.segments.map(\.index)
    for index in order where segments[index] == nil {
        throw MediaError(.incompatibleSegments, "segment \(index) of \(order.count) is missing; encode it before stitching")
    }
    if let stray = segments.keys.sorted().first(where: { !order.contains($0) }) {
        throw MediaError(.incompatibleSegments, "segment \(stray) is not part of plan \(plan.id)")
    }
}

// MARK: - Feeds

/// The segment file after `reader`'s, which has been read to its end: checks that file against
/// its recorded checksum, then opens the next (nil after the last).
func nextSegment(after reader: SegmentFileReader?, current: inout Int, specs: [SegmentSpec], files: [Int: String],
                 checksums: [Int: SHA256Digest]) throws(MediaError) -> SegmentFileReader? {
    if let reader, let expected = checksums[specs[current].index], let actual = reader.checksum(), expected != actual {
        throw MediaError(.incompatibleSegments, "segment \(specs[current].index) ('\(reader.path)') does not match its "
                         + "checksum; it changed after it was encoded", isRetryable: true)
    }
    current += 1
    guard current < specs.count else { return nil }
    return try SegmentFileReader(path: files[specs[current].index]!, verifying: checksums[specs[current].index] != nil)
}

/// A source of output packets in output-time order.
protocol StitchFeed: AnyObject {
    /// The output time of the next packet; nil when there are no more.
    func peekTime() throws(MediaError) -> MediaTime?
    /// Writes (or hands to its track path) the packet ``peekTime()`` described.
    func emit(into muxer: Muxer) throws(MediaError)
}

/// The first segment's header of a group, checked against every other's.
private func readHeaders(plan: SegmentPlan, specs: [SegmentSpec], files: [Int: String], what: String, stream: Int = 0)
    throws(MediaError) -> [(spec: SegmentSpec, reader: SegmentFileReader)] {
    // A streaming package's video segments carry one stream per rung.
    let expected = what == "video" ? max(1, plan.package?.renditions.count ?? 1) : 1
    var reference: SegmentFile.Header?
    var out: [(SegmentSpec, SegmentFileReader)] = []
    for spec in specs {
        let reader = try SegmentFileReader(path: files[spec.index]!, verifying: false)  // headers only
        let header = reader.header
        guard header.planID == plan.id else {
            throw MediaError(.incompatibleSegments, "segment file '\(reader.path)' belongs to another job (plan \(header.planID))")
        }
        guard header.index == spec.index else {
            throw MediaError(.incompatibleSegments,
                             "segment file '\(reader.path)' holds segment \(header.index), not \(spec.index) (duplicate or misplaced)")
        }
        guard header.streams.count == expected else {
            throw MediaError(.incompatibleSegments, "segment \(spec.index) has \(header.streams.count) streams, not \(expected)")
        }
        if let reference {
            if let difference = header.streams[stream].firstDifference(from: reference.streams[stream]) {
                throw MediaError(.incompatibleSegments,
                                 "segment \(spec.index)'s \(header.streams[stream].mediaType) differs from segment \(specs[0].index)'s "
                                 + "in \(difference); all segments must be encoded with identical settings")
            }
        } else {
            reference = header
            guard header.streams[stream].mediaType == what else {
                throw MediaError(.incompatibleSegments, "segment \(spec.index) holds \(header.streams[stream].mediaType), not \(what)")
            }
        }
        out.append((spec, reader))
    }
    return out
}

/// The video segments, one after the other, with decode times rebuilt for the whole file; of a
/// streaming package's segments, one rung's stream.
final class VideoUnits: StitchFeed {
    let plan: SegmentPlan
    let files: [Int: String]
    var checksums: [Int: SHA256Digest] = [:]
    let specs: [SegmentSpec]
    let reference: CodecParameters
    private var sortedPTS: [Int64] = []
    private var reorderDepth = 0
    private var step: Int64 = 1
    private var current = -1
    private var reader: SegmentFileReader?
    /// The packet ``peekTime()`` described, until it is emitted.
    let packet = Packet()
    private var ready = false
    let timeBase: AVRational
    private let stream: Int
    private var output = 0
    private(set) var written = 0
    /// The peak rate's decoder buffer, fed every picture written (nil without a peak rate).
    var buffer: VideoBufferModel?

    init(plan: SegmentPlan, specs: [SegmentSpec], files: [Int: String], stream: Int = 0) throws(MediaError) {
        self.plan = plan
        self.specs = specs
        self.files = files
        self.stream = stream
        let units = try readHeaders(plan: plan, specs: specs, files: files, what: "video", stream: stream)
        reference = units[0].reader.header.streams[stream]
        timeBase = reference.timeBase.av
        var previousLast: Int64?
        for (spec, reader) in units {
            let stamps = reader.trailer.videoTimestamps(stream: stream)
            let sorted = stamps.sorted()
            guard let first = sorted.first else {
                throw MediaError(.incompatibleSegments, "segment \(spec.index) has no video frames")
            }
            if let previousLast, first <= previousLast {
                throw MediaError(.incompatibleSegments, "segment \(spec.index)'s video overlaps the segment before it")
            }
            previousLast = sorted.last
            var rank: [Int64: Int] = [:]
            for (i, t) in sorted.enumerated() { rank[t] = i }
            for (k, t) in stamps.enumerated() { reorderDepth = max(reorderDepth, k - rank[t]!) }
            sortedPTS.append(contentsOf: sorted)
        }
        step = sortedPTS.count > 1 ? max(1, sortedPTS[1] - sortedPTS[0]) : 1
    }

    func addStream(to muxer: Muxer) throws(MediaError) -> Int {
        output = try muxer.addStream(parameters: reference)
        return output
    }

    private func decodeTime(_ k: Int) -> Int64 {
        k >= reorderDepth ? sortedPTS[k - reorderDepth] : sortedPTS[0] - Int64(reorderDepth - k) * step
    }

    func peekTime() throws(MediaError) -> MediaTime? {
        while !ready {
            if let reader, let index = try reader.next(into: packet, stream: stream) {
                guard index == stream else { continue }
                packet.dts = decodeTime(written)
                ready = true
                break
            }
            reader = try nextSegment(after: reader, current: &current, specs: specs, files: files, checksums: checksums)
            guard reader != nil else { return nil }
        }
        return MediaTime(value: packet.dts, timeBase: Rational(timeBase))
    }

    func emit(into muxer: Muxer) throws(MediaError) {
        written += 1
        ready = false
        buffer?.takeOut(bytes: packet.size, at: MediaTime(value: packet.dts, timeBase: Rational(timeBase)))
        try muxer.write(packet, stream: output, timeBase: timeBase)
    }
}

/// One audio track's segments: each one's kept packets, checked to continue the grid.
final class AudioUnits: StitchFeed {
    let plan: SegmentPlan
    let files: [Int: String]
    let checksums: [Int: SHA256Digest]
    let specs: [SegmentSpec]
    let reference: CodecParameters
    private let samplesPerPacket: Int64
    private var current = -1
    private var reader: SegmentFileReader?
    /// The packet ``peekTime()`` described, until it is emitted.
    let packet = Packet()
    private var ready = false
    let timeBase: AVRational
    private var output = 0
    private var nextPTS: Int64?
    private(set) var kept = 0

    init(plan: SegmentPlan, track: Int, specs: [SegmentSpec], files: [Int: String], checksums: [Int: SHA256Digest]) throws(MediaError) {
        self.plan = plan
        self.specs = specs
        self.files = files
        self.checksums = checksums
        guard !specs.isEmpty else {
            throw MediaError(.incompatibleSegments, "plan \(plan.id) has no segments for audio track \(track)")
        }
        let units = try readHeaders(plan: plan, specs: specs, files: files, what: "audio")
        reference = units[0].reader.header.streams[0]
        timeBase = reference.timeBase.av
        samplesPerPacket = Int64(plan.audioTracks[track].framing?.samplesPerPacket ?? 0)
    }

    func addStream(to muxer: Muxer) throws(MediaError) -> Int {
        output = try muxer.addStream(parameters: reference)
        return output
    }

    func peekTime() throws(MediaError) -> MediaTime? {
        while !ready {
            if let reader, try reader.next(into: packet) != nil {
                guard let keep = specs[current].audio else { continue }
                let pts = packet.pts
                if let s = keep.keepStart, pts < s + lead { continue }
                if let e = keep.keepEnd, pts >= e + lead { continue }
                if let expected = nextPTS, pts != expected {
                    throw MediaError(.incompatibleSegments,
                                     "segment \(specs[current].index)'s audio does not continue the previous segment's "
                                     + "(packet at sample \(pts), expected \(expected)); encode it again")
                }
                nextPTS = pts + (samplesPerPacket > 0 ? samplesPerPacket : packet.duration)
                packet.dts = pts
                ready = true
                break
            }
            reader = try nextSegment(after: reader, current: &current, specs: specs, files: files, checksums: checksums)
            guard reader != nil else { return nil }
        }
        return MediaTime(value: packet.dts, timeBase: Rational(timeBase))
    }

    /// Keep ranges count output samples from the track's first; packets carry the lead too.
    private var lead: Int64 {
        guard let track = specs.first?.audio?.track, plan.audioTracks.indices.contains(track) else { return 0 }
        return plan.audioTracks[track].lead
    }

    func emit(into muxer: Muxer) throws(MediaError) {
        kept += 1
        ready = false
        try muxer.write(packet, stream: output, timeBase: timeBase)
    }
}

/// Packets of the source handed to track paths (copies, subtitles, data), in output time.
private final class SourceFeed: StitchFeed {
    private let demuxer: Demuxer
    private let paths: [Int: any TrackPath]
    private let plan: ExportPlan
    private var pending: [Packet]
    private var current: Packet?
    private var finished = false

    init(demuxer: Demuxer, paths: [any TrackPath], plan: ExportPlan, seekingFor copies: [PlannedPassThrough]) throws(MediaError) {
        self.demuxer = demuxer
        self.plan = plan
        self.paths = Dictionary(uniqueKeysWithValues: paths.map { ($0.streamIndex, $0) })
        demuxer.discardAll(except: Set(paths.map(\.streamIndex)))
        // Copied audio and video start near the output's zero; riders read from the start.
        var needs: [Int: MediaTime] = [:]
        for p in copies where p.kind == .video || p.kind == .audio { needs[p.source] = plan.videoWindow.start }
        var seekPlan = plan
        seekPlan.videoStream = copies.first { $0.kind == .video }?.source
        pending = needs.isEmpty ? [] : try Positioner(plan: seekPlan, demuxer: demuxer, needs: needs).position()
    }

    func peekTime() throws(MediaError) -> MediaTime? {
        while current == nil && !finished {
            if !pending.isEmpty {
                current = pending.removeFirst()
            } else {
                let p = Packet()
                if try demuxer.read(into: p) { current = p } else { finished = true }
            }
            if let c = current, paths[Int(c.streamIndex)] == nil || paths[Int(c.streamIndex)]!.isDone {
                current = nil
                if paths.values.allSatisfy(\.isDone) { finished = true }
            }
        }
        guard let c = current else { return nil }
        let stamp = c.dts != FFmpeg.noPTS ? c.dts : c.pts
        guard stamp != FFmpeg.noPTS else { return plan.videoWindow.start - plan.outputZero }
        let tb = Rational(demuxer.stream(Int(c.streamIndex)).pointee.time_base)
        return MediaTime(value: stamp, timeBase: tb) - plan.origin - plan.outputZero
    }

    func emit(into muxer: Muxer) throws(MediaError) {
        guard let c = current else { return }
        current = nil
        try paths[Int(c.streamIndex)]?.handle(c)
    }
}
