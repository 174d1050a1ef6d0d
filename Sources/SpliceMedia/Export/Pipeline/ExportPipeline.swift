internal import CFFmpeg
import Foundation
import SpliceCore

/// Runs one ``ExportPlan`` on the calling thread (a dedicated one — see ``BlockingThread``):
/// demux, route each packet to its track path, flush, and finish the file.
final class ExportPipeline {
    struct Result: Sendable {
        var videoFrames: Int
        var audioSamples: Int64
        /// Output pts of every video frame written (encoder time base), for segment bookkeeping.
        var videoTimestamps: [Int64]
        /// Audio encoder priming and packet size, when audio was encoded.
        var audioPriming: Int?
        var audioPacketSamples: Int?
        /// SHA-256 of a segment file.
        var checksum: SHA256Digest?
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
        let demuxer = try Demuxer(location: plan.location)
        var keep = Set<Int>()
        if let v = plan.videoStream { keep.insert(v) }
        if let a = plan.audioStream { keep.insert(a) }
        demuxer.discardAll(except: keep)

        let writer: any PacketWriter
        var muxer: Muxer?
        var segmentWriter: SegmentFileWriter?
        switch plan.output {
        case .file(let muxerName, _, let replacing):
            let m = try Muxer(destination: plan.destination, formatName: muxerName, replacing: replacing)
            muxer = m
            writer = m
        case .segment(let planID, let index):
            let s = try SegmentFileWriter(destination: plan.destination, planID: planID, index: index)
            segmentWriter = s
            writer = s
        }
        var paths: [any TrackPath] = []
        var videoEncode: VideoEncodePath?
        var audioEncode: AudioEncodePath?
        if let v = plan.videoStream, let route = plan.video {
            switch route {
            case .encode(let encoding):
                let path = try VideoEncodePath(plan: plan, encoding: encoding, demuxer: demuxer, streamIndex: v,
                                               writer: writer, extraOptions: plan.extraVideoOptions)
                videoEncode = path
                paths.append(path)
            case .copy:
                guard let muxer else { throw MediaError(.internalError, "segments are always encoded") }
                paths.append(try CopyPath(plan: plan, demuxer: demuxer, streamIndex: v, muxer: muxer))
            }
        }
        if let a = plan.audioStream, let route = plan.audio {
            switch route {
            case .encode(let encoding):
                let path = try AudioEncodePath(plan: plan, encoding: encoding, demuxer: demuxer, streamIndex: a, writer: writer)
                audioEncode = path
                paths.append(path)
            case .copy:
                guard let muxer else { throw MediaError(.internalError, "segments are always encoded") }
                paths.append(try CopyPath(plan: plan, demuxer: demuxer, streamIndex: a, muxer: muxer))
            }
        }
        if let muxer {
            try muxer.writeHeader(metadata: outputMetadata(demuxer), options: muxerOptions(muxer))
        } else {
            try writer.writeHeader(metadata: [:], options: [:])
        }

        var pending = try Positioner(plan: plan, demuxer: demuxer).position()
        let packet = Packet()
        var reachedEnd = false
        var lastReported = -1
        let byStream = Dictionary(uniqueKeysWithValues: paths.map { ($0.streamIndex, $0) })
        while !paths.allSatisfy(\.isDone) {
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
            if let path = byStream[Int(next.streamIndex)] {
                try path.handle(next)
            }
            if let total = plan.progressDuration, total > .zero {
                let done = paths.map(\.outputTime).max() ?? .zero
                let permille = Int(min(999, max(0, done.permille(of: total))))
                if permille > lastReported {
                    lastReported = permille
                    onProgress(Double(permille) / 1000)
                }
            }
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
        try writer.finish()
        onProgress(1)
        return Result(videoFrames: videoEncode?.framesWritten ?? 0, audioSamples: audioEncode?.samplesEncoded ?? 0,
                      videoTimestamps: videoEncode?.writtenTimestamps ?? [], audioPriming: audioEncode?.priming,
                      audioPacketSamples: audioEncode?.samplesPerPacket, checksum: segmentWriter?.checksum)
    }

    private func outputMetadata(_ demuxer: Demuxer) -> [String: String] {
        var tags = Dictionary(fromAVDictionary: demuxer.context.pointee.metadata)
        for key in ["major_brand", "minor_version", "compatible_brands", "encoder", "ENCODER"] {
            tags.removeValue(forKey: key)
        }
        return tags.merging(plan.metadata) { _, mine in mine }
    }

    private func muxerOptions(_ muxer: Muxer) -> [String: String] {
        guard case .file(_, isQuickTime: true, _) = plan.output else { return plan.muxerOptions }
        return muxer.quickTimeOptions(fastStart: plan.fastStart, customTags: !plan.metadata.isEmpty)
            .merging(plan.muxerOptions) { _, explicit in explicit }
    }
}
