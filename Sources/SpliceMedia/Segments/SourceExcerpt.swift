internal import CFFmpeg
public import Foundation
public import SpliceCore

/// The part of a source one segment reads, cut by stream copy (no decoding) into a segment file,
/// so a worker that cannot see the source encodes the segment from the excerpt alone.
///
/// The excerpt holds exactly the packets a run of the segment's export reads from the source, in
/// the order it reads them: the demuxer is put where the run's ``Positioner`` puts it (the keyframe
/// the segment decodes from, the audio anchor less the decoder warm-up), and reading stops once
/// nothing later can reach the output — for video, after the first keyframe at or past the
/// segment's end and its leading pictures; for audio, a margin past the last source sample the
/// resampler is fed. The file's header carries the probed source (``Asset``), every stream's codec
/// parameters and time base, and the stream fields the decoders read, so the worker's
/// ``SegmentExporter`` resolves the same settings and decodes the same packets with the same
/// timestamps: the encoded segment is byte-identical to one exported from the source itself.
public enum SourceExcerpt {
    /// What a worker needs of the source besides its packets.
    struct Origin: Codable, Sendable, Hashable {
        var asset: Asset
        /// Per source stream, in stream order.
        var streams: [StreamFields]
    }

    /// The `AVStream` fields a run reads beyond the codec parameters.
    struct StreamFields: Codable, Sendable, Hashable {
        var codecTag: UInt32
        var startTime: Int64?
        var duration: Int64?
        var averageFrameRate: Rational
        var realFrameRate: Rational
        var disposition: Int32

        init(_ st: UnsafeMutablePointer<AVStream>) {
            codecTag = st.pointee.codecpar.pointee.codec_tag
            startTime = st.pointee.start_time == FFmpeg.noPTS ? nil : st.pointee.start_time
            duration = st.pointee.duration == FFmpeg.noPTS ? nil : st.pointee.duration
            averageFrameRate = Rational(st.pointee.avg_frame_rate)
            realFrameRate = Rational(st.pointee.r_frame_rate)
            disposition = st.pointee.disposition
        }
    }

    /// An excerpt written to disk.
    public struct Written: Sendable, Codable, Hashable {
        public var path: String
        public var checksum: SHA256Digest
        public var bytes: Int64
        /// Packets copied.
        public var packets: Int
    }

    /// Audio read past the last sample a run feeds: decoders and their warm-up need nothing
    /// more, and a few kilobytes are nothing to transfer.
    static let audioTail = MediaTime(seconds: 2)

    /// Cuts the excerpt of segment `index` of `plan` from `plan.source` into `output` (written
    /// beside it and renamed into place; nothing is left on failure).
    public static func cut(plan: SegmentPlan, segment index: Int, to output: URL) async throws -> Written {
        guard let spec = plan.segments.first(where: { $0.index == index }) else {
            throw MediaError(.internalError, "plan \(plan.id) has no segment \(index)")
        }
        return try await BlockingThread.run("splice.excerpt.\(index)") {
            try cut(plan: plan, spec: spec, destination: output.path)
        }
    }

    private static func cut(plan: SegmentPlan, spec: SegmentSpec, destination: String) throws -> Written {
        _ = FFmpeg.setUp
        let asset = try Asset(probing: plan.source)
        let run = try ExportPlan.segment(plan, spec: spec, asset: asset, destination: destination, codecThreads: 1)
        let demuxer = try Demuxer(location: plan.source)
        demuxer.discardAll(except: run.streamsRead)
        let writer = try SegmentFileWriter(destination: destination, planID: plan.id, index: spec.index)
        for i in 0..<demuxer.streamCount { writer.addStream(copying: demuxer.stream(i)) }
        writer.describeSource(Origin(asset: asset, streams: (0..<demuxer.streamCount).map { StreamFields(demuxer.stream($0)) }))
        try writer.writeHeader(metadata: [:], options: [:])

        var ends = ExcerptEnds(run: run, asset: asset, demuxer: demuxer)
        var packets = 0
        let copy = { (packet: Packet) throws(MediaError) -> Void in
            let stream = Int(packet.streamIndex)
            try writer.write(packet, stream: stream, timeBase: demuxer.stream(stream).pointee.time_base)
            packets += 1
        }
        // What the positioner read is handled by the run whatever it holds: copy it all, in order.
        for packet in try Positioner(plan: run, demuxer: demuxer, needs: Positioner.needs(of: run, demuxer: demuxer)).position() {
            _ = ends.keeps(packet)
            try copy(packet)
        }
        let packet = Packet()
        while !ends.allClosed, try demuxer.read(into: packet) {
            if ends.keeps(packet) { try copy(packet) }
        }
        try writer.finish()
        guard let checksum = writer.checksum else {
            throw MediaError(.internalError, "the excerpt '\(destination)' was written without its checksum")
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int64) ?? 0
        return Written(path: destination, checksum: checksum, bytes: bytes, packets: packets)
    }

    /// The probed source that the excerpt at `path` carries, checked to be the excerpt of segment
    /// `index` of plan `planID`.
    static func asset(of path: String, planID: String, index: Int) throws(MediaError) -> Asset {
        let reader = try SegmentFileReader(path: path, verifying: false)
        guard let origin = reader.header.source else {
            throw MediaError(.invalidMedia, "'\(path)' is a segment file but not a source excerpt")
        }
        guard reader.header.planID == planID, reader.header.index == index else {
            throw MediaError(.invalidMedia, "'\(path)' is the excerpt of segment \(reader.header.index) of plan "
                             + "\(reader.header.planID), not of segment \(index) of plan \(planID)")
        }
        return origin.asset
    }
}

/// Where an excerpt stops reading each stream: a small state machine per stream, fed every
/// packet in read order.
private struct ExcerptEnds {
    private enum Video {
        /// Before the first keyframe at or after the end.
        case open
        /// After that keyframe (pts): its leading pictures (earlier pts) still belong.
        case leading(Int64)
        case closed
    }

    private let origin: MediaTime
    private let videoStream: Int?
    private let videoEnd: MediaTime?
    private var video = Video.open
    /// Asset time past which an audio stream's packets are no longer read.
    private var audioLimits: [Int: MediaTime] = [:]
    private var closedAudio: Set<Int> = []
    private let timeBases: [Int: Rational]
    /// Some stream read has no end before the source's.
    private let unbounded: Bool

    init(run: ExportPlan, asset: Asset, demuxer: Demuxer) {
        origin = run.origin
        videoStream = run.videoStream
        videoEnd = run.videoWindow.end
        var timeBases: [Int: Rational] = [:]
        for stream in run.streamsRead { timeBases[stream] = Rational(demuxer.stream(stream).pointee.time_base) }
        self.timeBases = timeBases
        for track in run.audio {
            guard case .encode(let encoding, let placement) = track.route else { continue }
            let inputRate = Int(max(1, demuxer.stream(track.stream).pointee.codecpar.pointee.sample_rate))
            guard let limit = placement.sourceLimit(inputRate: inputRate, outputRate: encoding.sampleRate) else { continue }
            // Positions count source samples from the anchor packet's (or the track's first).
            let base: MediaTime, basePosition: Int64
            if let anchor = placement.anchor, let tb = timeBases[track.stream] {
                base = MediaTime(value: anchor.stamp, timeBase: tb) - run.origin
                basePosition = anchor.position
            } else {
                base = asset.track(track.stream)?.startTime ?? .zero
                basePosition = 0
            }
            audioLimits[track.stream] = base + MediaTime(value: max(0, limit - basePosition), timescale: Int32(inputRate))
                + SourceExcerpt.audioTail
        }
        let bounded = audioLimits.count + (videoStream != nil && videoEnd != nil ? 1 : 0)
        unbounded = bounded < timeBases.count
    }

    /// Whether every stream has reached its end (a stream without one is read to the end of the source).
    var allClosed: Bool {
        guard !unbounded else { return false }
        if videoStream != nil, case .open = video { return false }
        if videoStream != nil, case .leading = video { return false }
        return closedAudio.count == audioLimits.count
    }

    /// Whether `packet` belongs in the excerpt.
    mutating func keeps(_ packet: Packet) -> Bool {
        let stream = Int(packet.streamIndex)
        guard let tb = timeBases[stream] else { return false }
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        let time = stamp == FFmpeg.noPTS ? nil : MediaTime(value: stamp, timeBase: tb) - origin
        if stream == videoStream {
            guard let end = videoEnd else { return true }
            switch video {
            case .open:
                if packet.isKeyframe, let time, time >= end { video = .leading(packet.pts) }
                return true
            case .leading(let keyframe):
                if packet.pts != FFmpeg.noPTS && packet.pts < keyframe { return true }
                video = .closed
                return false
            case .closed:
                return false
            }
        }
        guard let limit = audioLimits[stream] else { return true }
        if closedAudio.contains(stream) { return false }
        if let time, time > limit {
            closedAudio.insert(stream)
            return false
        }
        return true
    }
}
