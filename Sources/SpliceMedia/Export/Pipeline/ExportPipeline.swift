internal import CFFmpeg
import Foundation
import SpliceCore

/// Runs one ``ExportPlan`` on the calling thread (a dedicated one — see ``BlockingThread``):
/// demux, route each packet to its track path, flush, and finish the file.
///
/// Audio and video paths drive the run: it reads until they are complete. Subtitle and data
/// tracks ride along; when the run starts mid-file (a seek), they are read from the file's start
/// by a second demuxer, so a cue that began before the seek point is still found, and merged in
/// by time.
final class ExportPipeline {
    struct Result: Sendable {
        var videoFrames: Int
        /// Samples encoded for the first audio track.
        var audioSamples: Int64
        /// Output pts of every video frame written (encoder time base), for segment bookkeeping.
        var videoTimestamps: [Int64]
        /// SHA-256 of a segment file.
        var checksum: SHA256Digest?
        /// Bytes of encoded video written, and the encoder's mean frame QP when it reports one.
        var videoBytes: Int64 = 0
        var meanQP: Double?
        /// The size of the file written (not set for a segment file).
        var outputBytes: Int64?
        /// The video's quality against the pictures encoded, when the plan measures it.
        var quality: QualitySeries?
        /// A probe run's outcome per CRF (``ExportPlan/Probe``): bytes and quality of each rendition.
        var probes: [(bytes: Int64, quality: QualitySeries?)] = []
    }

    private let plan: ExportPlan
    private let isCancelled: () -> Bool
    private let onProgress: (Double) -> Void

    init(plan: ExportPlan, isCancelled: @escaping () -> Bool, onProgress: @escaping (Double) -> Void) {
        self.plan = plan
        self.isCancelled = isCancelled
        self.onProgress = onProgress
    }

    func run() throws(MediaError) -> Result {
        _ = FFmpeg.setUp
        let demuxer: Demuxer
        if let excerpt = plan.excerpt {
            demuxer = try Demuxer(excerpt: excerpt)
        } else {
            demuxer = try Demuxer(location: plan.location)
        }
        let cueStreams = plan.cueStreams
        demuxer.discardAll(except: plan.streamsRead)

        var writer: any PacketWriter
        var muxer: Muxer?
        var segmentWriter: SegmentFileWriter?
        switch plan.output {
        case .file(let muxerName, let isQuickTime, let replacing):
            // Finished MP4/MOV files are rewritten for faststart and for timed-metadata tracks.
            let rewrites = isQuickTime && (plan.fastStart || !plan.timedMetadata.isEmpty || !plan.annotations.isEmpty)
            let m = try Muxer(destination: plan.destination, formatName: muxerName, replacing: replacing,
                              rewritesFile: rewrites)
            muxer = m
            writer = m
        case .segment(let planID, let index):
            let s = try SegmentFileWriter(destination: plan.destination, planID: planID, index: index)
            segmentWriter = s
            writer = s
        case .discard:
            writer = DiscardingWriter()
        }
        // A ladder's rungs encode on threads of their own. Only into a segment file: every write
        // then goes through `writer` (a file's copied and subtitle tracks write to the muxer
        // directly). Not a quality target's probes: side by side they were no faster (0.985×
        // wall in five pairs) and the job's peak memory rose by 40 % (713 MB against 513 MB:
        // each probe thread's allocations stay in a malloc arena of its own).
        let sideBySide = plan.rungsSideBySide && muxer == nil && !plan.ladder.isEmpty
        if sideBySide { writer = SerializedPacketWriter(writer) }

        // Paths: audio and video first (they drive the run), then the riders.
        var paths: [any TrackPath] = []
        var videoEncode: VideoEncodePath?
        var audioEncodes: [AudioEncodePath] = []
        var videoOutput: Int?
        var pictureSize: (width: Int, height: Int)?
        if let v = plan.videoStream, let route = plan.video {
            switch route {
            case .encode(let encoding):
                let path = try VideoEncodePath(plan: plan, encoding: encoding, demuxer: demuxer, streamIndex: v,
                                               writer: writer, extraOptions: plan.extraVideoOptions,
                                               sideBySide: sideBySide)
                videoEncode = path
                videoOutput = path.outputIndex
                pictureSize = (encoding.width, encoding.height)
                paths.append(path)
            case .copy:
                guard let muxer else { throw MediaError(.internalError, "segments are always encoded") }
                let path = try CopyPath(plan: plan, demuxer: demuxer, streamIndex: v, muxer: muxer)
                videoOutput = muxer.streamCount - 1
                let par = demuxer.stream(v).pointee.codecpar.pointee
                pictureSize = (Int(par.width), Int(par.height))
                paths.append(path)
            }
        }
        for track in plan.audio {
            let stream = demuxer.stream(track.stream)
            switch track.route {
            case .encode(let encoding, let placement):
                let path = try AudioEncodePath(plan: plan, encoding: encoding, placement: placement, demuxer: demuxer,
                                               streamIndex: track.stream, writer: writer)
                if let muxer { muxer.describe(stream: muxer.streamCount - 1, like: stream) }
                audioEncodes.append(path)
                paths.append(path)
            case .copy:
                guard let muxer else { throw MediaError(.internalError, "segments are always encoded") }
                paths.append(try CopyPath(plan: plan, demuxer: demuxer, streamIndex: track.stream, muxer: muxer))
            }
        }
        let drivers = paths.count
        var collectors: [TimedMetadataPath] = []
        if let muxer {
            for subtitle in plan.subtitles {
                if let target = subtitle.convertTo {
                    paths.append(try SubtitleConvertPath(plan: plan, demuxer: demuxer, streamIndex: subtitle.track.id,
                                                         targetCodec: target, muxer: muxer, pictureSize: pictureSize))
                } else {
                    paths.append(try CopyPath(plan: plan, demuxer: demuxer, streamIndex: subtitle.track.id, muxer: muxer))
                }
            }
            for d in plan.data {
                paths.append(try CopyPath(plan: plan, demuxer: demuxer, streamIndex: d, muxer: muxer))
            }
            if !plan.timedMetadata.isEmpty, let infos = QuickTimeTrackInfo.read(location: plan.location) {
                for m in plan.timedMetadata {
                    let id = Int(demuxer.stream(m).pointee.id)
                    guard let info = infos.first(where: { $0.trackID == id }) else { continue }
                    let path = TimedMetadataPath(plan: plan, demuxer: demuxer, streamIndex: m, info: info)
                    collectors.append(path)
                    paths.append(path)
                }
            }
            if let videoOutput {
                let st = muxer.context.pointee.streams[videoOutput]!
                if let v = plan.videoStream { muxer.describe(stream: videoOutput, like: demuxer.stream(v)) }
                if let tc = plan.timecode { av_dict_set(&st.pointee.metadata, "timecode", tc, 0) }
                if case .encode? = plan.video { plan.videoHDR?.attach(to: st) }
            }
            muxer.setChapters(plan.chapters)
            try muxer.writeHeader(metadata: outputMetadata(demuxer), options: muxerOptions(muxer))
        } else {
            try writer.writeHeader(metadata: [:], options: [:])
        }

        var pending = try Positioner(plan: plan, demuxer: demuxer, needs: Positioner.needs(of: plan, demuxer: demuxer))
            .position()
        // Riders of a run that seeks come from the start of the file, read ahead (they are small).
        var riders: [(time: MediaTime, packet: Packet)] = []
        let riderStreams = Set(cueStreams)
        let seeked = !pending.isEmpty
        if seeked && !riderStreams.isEmpty {
            riders = try readRiders(riderStreams)
            pending.removeAll { riderStreams.contains(Int($0.streamIndex)) }
        }

        let packet = Packet()
        var reachedEnd = false
        var lastReported = -1
        let byStream = Dictionary(uniqueKeysWithValues: paths.map { ($0.streamIndex, $0) })
        let driving = paths.prefix(drivers)
        var riderIndex = 0
        while !driving.allSatisfy(\.isDone) {
            if isCancelled() { throw MediaError.cancelled("the export to '\(plan.destination)'") }
            let next: Packet
            if !pending.isEmpty {
                next = pending.removeFirst()
            } else {
                guard try demuxer.read(into: packet) else {
                    reachedEnd = true
                    break
                }
                next = packet
            }
            let index = Int(next.streamIndex)
            if seeked && riderStreams.contains(index) { continue }
            if seeked, riderIndex < riders.count, let t = time(of: next, in: demuxer) {
                while riderIndex < riders.count && riders[riderIndex].time <= t {
                    try byStream[Int(riders[riderIndex].packet.streamIndex)]?.handle(riders[riderIndex].packet)
                    riderIndex += 1
                }
            }
            try byStream[index]?.handle(next)
            if let total = plan.progressDuration, total > .zero {
                let done = driving.map(\.outputTime).max() ?? .zero
                let permille = Int(min(999, max(0, done.permille(of: total))))
                if permille > lastReported {
                    lastReported = permille
                    onProgress(Double(permille) / 1000)
                }
            }
        }
        while riderIndex < riders.count {
            try byStream[Int(riders[riderIndex].packet.streamIndex)]?.handle(riders[riderIndex].packet)
            riderIndex += 1
        }
        if reachedEnd {
            for path in paths { try path.endOfInput() }
        }
        let checkCancelled = { [isCancelled, plan] () throws(MediaError) -> Void in
            if isCancelled() { throw MediaError.cancelled("the export to '\(plan.destination)'") }
        }
        try checkCancelled()
        for path in paths { try path.finish(checkCancelled: checkCancelled) }
        if let v = videoEncode, v.framesWritten == 0 { throw plan.noDecodableVideo }
        if let muxer, case .file(let muxerName, let isQuickTime, _) = plan.output {
            var extra = collectors.map(\.track)
            if !plan.annotations.isEmpty {
                extra.append(TimedAnnotation.track(plan.annotations, zero: plan.outputZero, end: plan.videoWindow.end))
            }
            let postProcess = isQuickTime && (!extra.isEmpty || !plan.timedMetadata.isEmpty || !plan.annotations.isEmpty)
            try muxer.finish(appending: postProcess ? extra : nil, isQuickTimeMovie: muxerName == "mov",
                             fastStart: plan.fastStart)
        } else {
            segmentWriter?.quality = videoEncode?.quality
            try writer.finish()
        }
        onProgress(1)
        return Result(videoFrames: videoEncode?.framesWritten ?? 0, audioSamples: audioEncodes.first?.samplesEncoded ?? 0,
                      videoTimestamps: videoEncode?.writtenTimestamps ?? [], checksum: segmentWriter?.checksum,
                      videoBytes: videoEncode?.bytesWritten ?? 0, meanQP: videoEncode?.meanQP,
                      outputBytes: muxer?.bytesWritten, quality: videoEncode?.quality,
                      probes: videoEncode?.renditionOutcomes ?? [])
    }

    /// Whether the codec's keyframes may open GOPs whose leading pictures reference the GOP
    /// before (H.264 sync samples are IDR pictures; MPEG-2, HEVC and MPEG-4 Part 2 keyframes
    /// need not be).
    static func mayHaveOpenGOPs(_ st: UnsafeMutablePointer<AVStream>) -> Bool {
        let id = st.pointee.codecpar.pointee.codec_id
        return id == AV_CODEC_ID_MPEG2VIDEO || id == AV_CODEC_ID_HEVC || id == AV_CODEC_ID_MPEG4
            || id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_VC1
    }

    /// Asset time of a packet, when it has one.
    private func time(of packet: Packet, in demuxer: Demuxer) -> MediaTime? {
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        guard stamp != FFmpeg.noPTS else { return nil }
        return MediaTime(value: stamp, timeBase: Rational(demuxer.stream(Int(packet.streamIndex)).pointee.time_base)) - plan.origin
    }

    /// Every packet of the rider streams up to the window's end, from the start of the file.
    private func readRiders(_ streams: Set<Int>) throws(MediaError) -> [(time: MediaTime, packet: Packet)] {
        let side = try Demuxer(location: plan.location)
        side.discardAll(except: streams)
        var out: [(time: MediaTime, packet: Packet)] = []
        while true {
            let p = Packet()
            guard try side.read(into: p) else { break }
            let tb = Rational(side.stream(Int(p.streamIndex)).pointee.time_base)
            let stamp = p.pts != FFmpeg.noPTS ? p.pts : p.dts
            guard stamp != FFmpeg.noPTS else { continue }
            let t = MediaTime(value: stamp, timeBase: tb) - plan.origin
            if let end = plan.videoWindow.end, t >= end { continue }
            out.append((t, p))
        }
        return out.sorted { $0.time < $1.time }
    }

    private func outputMetadata(_ demuxer: Demuxer) -> [String: String] {
        OutputMetadata.merging(source: Dictionary(fromAVDictionary: demuxer.context.pointee.metadata),
                               requested: plan.metadata)
    }

    private func muxerOptions(_ muxer: Muxer) -> [String: String] {
        guard case .file(_, isQuickTime: true, _) = plan.output else { return plan.muxerOptions }
        // Timed metadata is added after FFmpeg is done; the index is then moved first by Splice.
        let appends = !plan.timedMetadata.isEmpty || !plan.annotations.isEmpty
        return muxer.quickTimeOptions(fastStart: plan.fastStart && !appends, customTags: !plan.metadata.isEmpty)
            .merging(plan.muxerOptions) { _, explicit in explicit }
    }
}
