internal import CFFmpeg
import Foundation

/// A stitcher feed whose next packet can be looked at before it is written (``VideoUnits``,
/// ``AudioUnits``): what a rendition writer needs to cut fragments.
protocol PackageFeed: StitchFeed {
    var packet: Packet { get }
    var timeBase: AVRational { get }
    var reference: CodecParameters { get }
    func addStream(to muxer: Muxer) throws(MediaError) -> Int
}

extension VideoUnits: PackageFeed {}
extension AudioUnits: PackageFeed {}

/// One CMAF segment of a rendition as written.
struct WrittenSegment: Sendable, Hashable {
    /// File name inside the rendition's folder.
    var name: String
    /// Presentation start and length in the track's timescale (the first segment starts at 0:
    /// what precedes it, the audio priming, is hidden by the edit list).
    var start: Int64
    var duration: Int64
    /// Start and length on the media timeline (counted from the first sample's decode time, as
    /// `tfdt` counts): what DASH's SegmentTimeline gives.
    var mediaStart: Int64
    var mediaDuration: Int64
    var bytes: Int64
}

/// What writing one rendition produced.
struct WrittenRendition: Sendable {
    var folder: String
    var timescale: Int32
    /// Media time (track timescale, counted from the first sample's decode time) of presentation
    /// time zero: the edit list's media time, DASH's presentationTimeOffset (never negative: DASH
    /// cannot delay a track's start, so a first frame after zero starts at zero there).
    var presentationOffset: Int64
    var segments: [WrittenSegment]
    var reference: CodecParameters
    var packets: Int
    /// The least rate that plays it from any segment start after ``DASHManifest/minBufferSeconds``
    /// of buffering (``DeliveryBandwidth``): the DASH Representation's `@bandwidth`, bits per second.
    var deliveryBitrate: Int64 = 0

    /// The peak segment bit rate of RFC 8216 (4.3.4.2, BANDWIDTH): the largest bit rate of any
    /// run of consecutive segments lasting 0.5 to 1.5 times the target duration, bits per second.
    /// A short last segment (a 0.1 s tail after 6 s ones, a keyframe and two pictures) counts only
    /// with the segment before it: alone it once made a 2 Mbit/s rung's BANDWIDTH 3.4 Mbit/s, and a
    /// player picks rungs by BANDWIDTH. A rendition shorter than half the target: its average.
    var peakBitrate: Int64 {
        let ts = Int64(timescale), target = HLSPlaylist.targetDuration(self) * Int64(timescale)
        var peak: Int64?
        for first in segments.indices {
            var bytes: Int64 = 0, duration: Int64 = 0
            for segment in segments[first...] {
                bytes += segment.bytes
                duration += segment.duration
                if duration * 2 > target * 3 { break }
                if duration * 2 >= target { peak = max(peak ?? 0, bytes * 8 * ts / duration) }
            }
        }
        return peak ?? averageBitrate
    }
    var averageBitrate: Int64 {
        let d = segments.reduce(Int64(0)) { $0 + $1.duration }, b = segments.reduce(Int64(0)) { $0 + $1.bytes }
        return d > 0 ? b * 8 * Int64(timescale) / d : 0
    }
}

/// Writes one rendition of a package straight from the segment files: the feed's packets, timed
/// as the stitcher times them, through FFmpeg's MP4 muxer as one fragmented CMAF file
/// (`frag_custom`: a fragment is cut exactly where a streaming segment starts; `delay_moov` with
/// `use_editlist`: the `moov` is written with the first fragment, so the audio priming — the first
/// packet's pts −P — becomes the init segment's edit list), then split at its top-level boxes into
/// `init.mp4` (`ftyp` + `moov`) and one `.m4s` per fragment (`moof` + `mdat`). One muxer run per
/// rendition keeps tfdt continuous.
///
/// Video fragments start at the first keyframe at or after each multiple of the grid (the
/// segment exporter forced an IDR picture there); audio fragments at the first packet at or after it.
struct RenditionWriter {
    let grid: MediaTime
    let folder: URL
    /// Polled at every fragment: set, the rendition stops (`cancelled`).
    var cancelled: CancelFlag? = nil

    func write(_ feed: any PackageFeed, isVideo: Bool) throws(MediaError) -> WrittenRendition {
        let fm = FileManager.default
        do { try fm.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw MediaError(.writeFailed, "cannot create '\(folder.path)': \(error.localizedDescription)")
        }
        let whole = folder.appendingPathComponent("rendition.mp4").path
        let muxer = try Muxer(destination: whole, formatName: "mp4", replacing: true)
        let out = try feed.addStream(to: muxer)
        try muxer.writeHeader(metadata: [:], options: [
            "movflags": "+frag_custom+delay_moov+default_base_moof+cmaf", "use_editlist": "1",
        ])
        let timeBase = Rational(feed.timeBase)
        var starts: [Int64] = []  // first pts of each fragment, feed time base
        // The end: the latest presentation plus its packet's duration, or (packets without one) the
        // shortest step between presentation times seen — a frame of constant-rate video.
        var latest = (pts: Int64.min, duration: Int64(0)), shortestStep = Int64.max
        var previousPTS: Int64?
        var firstDTS: Int64?
        var next: MediaTime?
        var packets = 0
        // Every packet's decode time and size, each fragment's first marked (for the delivery rate).
        var samples: [DeliveryBandwidth.Sample] = []
        while try feed.peekTime() != nil {
            let p = feed.packet
            let t = MediaTime(value: p.pts, timeBase: timeBase)
            if firstDTS == nil { firstDTS = p.dts }
            let boundary = next.map { t >= $0 && (!isVideo || p.isKeyframe) } ?? true
            if boundary {
                if cancelled?.isSet == true { throw MediaError.cancelled("the rendition in '\(folder.path)'") }
                if !starts.isEmpty { try muxer.flushFragment() }
                starts.append(p.pts)
                next = grid.nextMultiple(after: MediaTime.max(t, .zero))
            } else if p.pts < starts[starts.count - 1] {
                starts[starts.count - 1] = p.pts
            }
            if let previousPTS, p.pts != previousPTS { shortestStep = min(shortestStep, abs(p.pts - previousPTS)) }
            previousPTS = p.pts
            if p.pts > latest.pts { latest = (p.pts, p.duration) }
            packets += 1
            samples.append(DeliveryBandwidth.Sample(decodeTime: p.dts, bits: Int64(p.size) * 8, startsSegment: boundary))
            try feed.emit(into: muxer)
            // With delay_moov the first flush writes only the moov (its edit list from the first
            // packet's dts) and keeps the queued samples for the next fragment.
            if packets == 1 { try muxer.flushFragment() }
        }
        guard let firstDTS, !starts.isEmpty else {
            throw MediaError(.incompatibleSegments, "a rendition of '\(folder.lastPathComponent)' has no packets")
        }
        try muxer.finish()
        let end = latest.pts + (latest.duration > 0 ? latest.duration : (shortestStep == .max ? 0 : shortestStep))
        let timescale = muxer.timeBase(of: out)
        let scale = { (v: Int64) in MediaTime(value: v, timeBase: timeBase).value(in: Rational(timescale), rounding: .nearest) }

        // The playlist's timeline starts at presentation zero: what comes before (the priming) is
        // hidden by the edit list, and a first frame after zero (a range that starts between
        // frames) is delayed by an empty edit, so the first segment covers [0, next start).
        var bounds = starts.map { max(0, scale($0)) }
        bounds[0] = 0
        bounds.append(scale(end))
        let origin = scale(firstDTS)
        var media = starts.map { scale($0) - origin }
        media.append(scale(end) - origin)
        let pieces = try CMAFFile.split(path: whole, into: folder, count: starts.count)
        unlink(whole)
        var segments: [WrittenSegment] = []
        for i in 0..<starts.count {
            segments.append(WrittenSegment(name: pieces[i].name, start: bounds[i], duration: bounds[i + 1] - bounds[i],
                                           mediaStart: media[i], mediaDuration: media[i + 1] - media[i], bytes: pieces[i].bytes))
        }
        // A fragment's boxes (moof, mdat header) arrive before its first sample: count them with it.
        let firsts = samples.indices.filter { samples[$0].startsSegment }
        for (i, first) in firsts.enumerated() where i < pieces.count {
            let end = i + 1 < firsts.count ? firsts[i + 1] : samples.count
            let payload = samples[first..<end].reduce(Int64(0)) { $0 + $1.bits }
            samples[first].bits += max(0, pieces[i].bytes * 8 - payload)
        }
        var written = WrittenRendition(folder: folder.lastPathComponent, timescale: timescale.den,
                                       presentationOffset: max(0, -scale(firstDTS)), segments: segments,
                                       reference: feed.reference, packets: packets)
        written.deliveryBitrate = DeliveryBandwidth.least(samples, timeBase: timeBase, bufferSeconds: DASHManifest.minBufferSeconds)
        return written
    }
}

/// Splits a fragmented MP4 at its top-level boxes: `init.mp4` is everything before the first
/// `moof`; each segment a `moof` and what follows it up to the next (`mdat`), trailing index
/// boxes (`mfra`) left out. Reads box headers and copies byte ranges, never the whole file at once.
enum CMAFFile {
    static func split(path: String, into folder: URL, count: Int) throws(MediaError) -> [(name: String, bytes: Int64)] {
        guard let input = fopen(path, "rb") else { throw SegmentFileWriter.systemError("cannot read back '\(path)': ") }
        defer { fclose(input) }
        fseeko(input, 0, SEEK_END)
        let total = Int64(ftello(input))
        var boxes: [(type: String, range: Range<Int64>)] = []
        var at: Int64 = 0
        var header = [UInt8](repeating: 0, count: 16)
        while at + 8 <= total {
            fseeko(input, off_t(at), SEEK_SET)
            let got = fread(&header, 1, 16, input)
            guard got >= 8 else { break }
            var size = header[0..<4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if size == 1, got == 16 {
                size = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            } else if size == 0 {
                size = total - at
            }
            guard size >= 8, at + size <= total else {
                throw MediaError(.internalError, "'\(path)' has a damaged \(type) box at \(at)")
            }
            boxes.append((type, at..<(at + size)))
            at += size
        }
        guard let firstFragment = boxes.firstIndex(where: { $0.type == "moof" }) else {
            throw MediaError(.internalError, "'\(path)' has no fragments")
        }
        var pieces: [(String, Range<Int64>)] = [("init.mp4", 0..<boxes[firstFragment].range.lowerBound)]
        var current: Range<Int64>?
        for box in boxes[firstFragment...] {
            if box.type == "moof" {
                if let current { pieces.append(("seg-\(String(format: "%05d", pieces.count)).m4s", current)) }
                current = box.range
            } else if box.type == "mdat", let c = current {
                current = c.lowerBound..<box.range.upperBound
            }
        }
        if let current { pieces.append(("seg-\(String(format: "%05d", pieces.count)).m4s", current)) }
        guard pieces.count == count + 1 else {
            throw MediaError(.internalError, "'\(path)' has \(pieces.count - 1) fragments, expected \(count)")
        }
        var out: [(name: String, bytes: Int64)] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for (name, range) in pieces {
            let target = folder.appendingPathComponent(name).path
            guard let output = fopen(target, "wb") else { throw SegmentFileWriter.systemError("cannot write '\(target)': ") }
            defer { fclose(output) }
            fseeko(input, off_t(range.lowerBound), SEEK_SET)
            var left = range.count
            while left > 0 {
                let n = fread(&buffer, 1, min(buffer.count, left), input)
                guard n > 0, fwrite(buffer, 1, n, output) == n else {
                    throw SegmentFileWriter.systemError("cannot write '\(target)': ")
                }
                left -= n
            }
            guard fflush(output) == 0 else { throw SegmentFileWriter.systemError("cannot write '\(target)': ") }
            if name != "init.mp4" { out.append((name, Int64(range.count))) }
        }
        return out
    }
}
