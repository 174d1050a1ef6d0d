internal import CFFmpeg
public import Foundation
public import SpliceCore

/// What a stitch wrote.
public struct StitchSummary: Sendable, Codable, Hashable {
    public var videoFrames: Int
    public var audioPackets: Int
    public var bytes: Int64
}

/// Joins the segment files of a ``SegmentPlan`` into one output file at the packet level — no
/// re-encode — so the result plays like a single-pass encode.
///
/// - Video: packets keep their presentation times (the source's steps); decode times are rebuilt
///   for the whole file as `dts[k] = pts_sorted[k − d]`, where d is the largest reordering depth
///   of any segment, so they rise strictly and never pass a presentation time.
/// - Audio: each segment contributes exactly the packets whose pts fall in its keep range: the
///   first keeps its priming packets, later ones drop their priming and pre-roll, the last keeps
///   its trimmed final packet. Kept packets must continue the grid with no gap or overlap.
///   The muxer turns the first packet's −P into the single edit list that hides the priming.
/// - Refuses segments from another plan, missing or duplicate segments, damaged files, checksum
///   mismatches and codec parameters that differ from segment 0's.
public struct Stitcher: Sendable {
    public let plan: SegmentPlan

    public init(plan: SegmentPlan) {
        self.plan = plan
    }

    /// Stitches `segments` (segment index → file) into `output`. With `checksums`, each file's
    /// SHA-256 must match. The output appears only on success. Without `overwrite`, a file
    /// already at `output` is an error (``MediaError/Code/outputExists``), checked before any
    /// segment is read and again when the finished file is moved into place; a segment file is
    /// never replaced (``OutputDestination``).
    public func stitch(segments: [Int: String], checksums: [Int: SHA256Digest] = [:], to output: URL,
                       overwrite: Bool = false) async throws -> StitchSummary {
        let plan = self.plan
        return try await BlockingThread.run("splice.stitch") {
            try StitchRun(plan: plan, segments: segments, checksums: checksums, destination: output.path,
                          overwrite: overwrite).run()
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

    func run() throws(MediaError) -> StitchSummary {
        _ = FFmpeg.setUp
        try OutputDestination.check(output: destination, inputs: segments.keys.sorted().map { segments[$0]! },
                                    overwrite: overwrite)
        let order = plan.segments.map(\.index)
        for index in order where segments[index] == nil {
            throw MediaError(.incompatibleSegments, "segment \(index) of \(order.count) is missing; encode it before stitching")
        }
        if let stray = segments.keys.sorted().first(where: { !order.contains($0) }) {
            throw MediaError(.incompatibleSegments, "segment \(stray) is not part of plan \(plan.id)")
        }

        // Pass 1: headers and trailers — check they belong together, collect video timestamps.
        var reference: SegmentFile.Header?
        var videoStream: Int?, audioStream: Int?
        var sortedPTS: [Int64] = []
        var reorderDepth = 0
        var previousLast: Int64?
        for index in order {
            let reader = try SegmentFileReader(path: segments[index]!, verifying: false)  // headers only
            let header = reader.header
            guard header.planID == plan.id else {
                throw MediaError(.incompatibleSegments, "segment file '\(reader.path)' belongs to another job (plan \(header.planID))")
            }
            guard header.index == index else {
                throw MediaError(.incompatibleSegments,
                                 "segment file '\(reader.path)' holds segment \(header.index), not \(index) (duplicate or misplaced)")
            }
            if let reference {
                guard header.streams.count == reference.streams.count else {
                    throw MediaError(.incompatibleSegments, "segment \(index) has \(header.streams.count) streams, segment 0 has \(reference.streams.count)")
                }
                for (a, b) in zip(header.streams, reference.streams) {
                    if let difference = a.firstDifference(from: b) {
                        throw MediaError(.incompatibleSegments,
                                         "segment \(index)'s \(a.mediaType) differs from segment 0's in \(difference); "
                                         + "all segments must be encoded with identical settings")
                    }
                }
            } else {
                reference = header
                videoStream = header.streams.firstIndex { $0.mediaType == "video" }
                audioStream = header.streams.firstIndex { $0.mediaType == "audio" }
            }
            if videoStream != nil {
                let stamps = reader.trailer.videoTimestamps
                let sorted = stamps.sorted()
                guard let first = sorted.first else {
                    throw MediaError(.incompatibleSegments, "segment \(index) has no video frames")
                }
                if let previousLast, first <= previousLast {
                    throw MediaError(.incompatibleSegments, "segment \(index)'s video overlaps segment \(index - 1)'s")
                }
                previousLast = sorted.last
                var rank: [Int64: Int] = [:]
                for (i, t) in sorted.enumerated() { rank[t] = i }
                for (k, t) in stamps.enumerated() { reorderDepth = max(reorderDepth, k - rank[t]!) }
                sortedPTS.append(contentsOf: sorted)
            }
        }
        guard let header = reference else { throw MediaError(.incompatibleSegments, "there are no segments to stitch") }

        // The output.
        let muxer = try Muxer(destination: destination, formatName: plan.outputFileType.muxerName, replacing: overwrite)
        var outVideo: Int?, outAudio: Int?
        var videoTB = AVRational(num: 1, den: 1), audioTB = AVRational(num: 1, den: 1)
        for (i, params) in header.streams.enumerated() where i == videoStream || i == audioStream {
            guard let par = avcodec_parameters_alloc() else { throw MediaError(.internalError, "out of memory") }
            var owned: UnsafeMutablePointer<AVCodecParameters>? = par
            defer { avcodec_parameters_free(&owned) }
            try params.apply(to: par)
            let tb = params.timeBase.av
            let out = try muxer.addStream(parameters: par, timeBase: tb)
            if let rate = params.frameRate { muxer.context.pointee.streams[out]!.pointee.avg_frame_rate = rate.av }
            if i == videoStream { outVideo = out; videoTB = tb } else { outAudio = out; audioTB = tb }
        }
        var options: [String: String] = [:]
        if plan.outputFileType.isQuickTime {
            options = muxer.quickTimeOptions(fastStart: plan.optimizesForNetworkUse, customTags: !plan.metadata.isEmpty)
        }
        try muxer.writeHeader(metadata: plan.metadata, options: options)

        // Pass 2: packets.
        let step = sortedPTS.count > 1 ? max(1, sortedPTS[1] - sortedPTS[0]) : 1
        func decodeTime(_ k: Int) -> Int64 {
            k >= reorderDepth ? sortedPTS[k - reorderDepth] : sortedPTS[0] - Int64(reorderDepth - k) * step
        }
        let packet = Packet()
        var videoIndex = 0, audioKept = 0
        var nextAudioPTS: Int64?
        let samplesPerPacket = Int64(plan.audioFraming?.samplesPerPacket ?? 0)
        for spec in plan.segments {
            let reader = try SegmentFileReader(path: segments[spec.index]!, verifying: checksums[spec.index] != nil)
            let keep = spec.audio
            while let stream = try reader.next(into: packet) {
                if stream == videoStream, let out = outVideo {
                    packet.dts = decodeTime(videoIndex)
                    videoIndex += 1
                    try muxer.write(packet, stream: out, timeBase: videoTB)
                } else if stream == audioStream, let out = outAudio, let keep {
                    let pts = packet.pts
                    if let s = keep.keepStart, pts < s { continue }
                    if let e = keep.keepEnd, pts >= e { continue }
                    if let expected = nextAudioPTS, pts != expected {
                        throw MediaError(.incompatibleSegments,
                                         "segment \(spec.index)'s audio does not continue the previous segment's "
                                         + "(packet at sample \(pts), expected \(expected)); encode it again")
                    }
                    nextAudioPTS = pts + (samplesPerPacket > 0 ? samplesPerPacket : packet.duration)
                    packet.dts = pts
                    audioKept += 1
                    try muxer.write(packet, stream: out, timeBase: audioTB)
                }
            }
            if let expected = checksums[spec.index], let actual = reader.checksum(), expected != actual {
                throw MediaError(.incompatibleSegments, "segment \(spec.index) ('\(reader.path)') does not match its checksum; "
                                 + "it changed after it was encoded", isRetryable: true)
            }
        }
        try muxer.finish()
        let bytes = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int64) ?? 0
        return StitchSummary(videoFrames: videoIndex, audioPackets: audioKept, bytes: bytes)
    }
}
