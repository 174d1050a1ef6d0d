import Foundation

/// A timed-metadata track to add to a QuickTime/MP4 file: a sample description copied whole (a
/// `mebx` with its key table, a `mett`…) and timed samples. Written by
/// ``QuickTimeTrackAppender`` after FFmpeg has written the rest of the file.
struct TimedMetadataTrack: Sendable, Hashable {
    struct Sample: Sendable, Hashable {
        /// Start and length in the track's timescale.
        var time: Int64
        var duration: Int64
        var data: Data
    }

    /// The whole sample description entry (size, type and body).
    var sampleEntry: Data
    var handlerName: String
    var language: String?
    var timescale: Int32
    /// Samples in time order; they may leave gaps (filled with empty samples when written).
    var samples: [Sample]
    /// Whether the track describes the output's video track (`tref`/`cdsc`, as the seed's
    /// `addTrackAssociationWithTrackOfInput:type:AVTrackAssociationTypeMetadataReferent`).
    var describesVideo: Bool

    /// Samples laid end to end from time 0: an empty sample (no metadata valid) fills every gap,
    /// overlaps are cut at the next sample's start.
    var contiguousSamples: [Sample] {
        var out: [Sample] = []
        var t: Int64 = 0
        for (i, s) in samples.enumerated() {
            let start = max(s.time, t)
            var end = s.time + max(0, s.duration)
            if i + 1 < samples.count { end = min(end, max(samples[i + 1].time, start)) }
            if start > t { out.append(Sample(time: t, duration: start - t, data: Data())) }
            guard end > start else { continue }
            out.append(Sample(time: start, duration: end - start, data: s.data))
            t = end
        }
        return out
    }
}

/// Adds ``TimedMetadataTrack``s to a finished QuickTime/MP4 file in place: the samples go into a
/// new `mdat` at the end, the `moov` is rewritten after it with one `trak` per track (and its
/// `next_track_ID` advanced). With `fastStart`, the `moov` is then moved to the front and every
/// chunk offset shifted, as FFmpeg's own `+faststart` would.
enum QuickTimeTrackAppender {
    static func append(_ tracks: [TimedMetadataTrack], to path: String, isQuickTimeMovie: Bool,
                       fastStart: Bool) throws(MediaError) {
        let nonEmpty = tracks.filter { !$0.samples.isEmpty }
        do {
            if !nonEmpty.isEmpty { try appendTracks(nonEmpty, to: path, quickTime: isQuickTimeMovie) }
            if fastStart { try moveIndexToFront(path) }
        } catch let error as MediaError {
            throw error
        } catch {
            throw MediaError(.writeFailed, "cannot add the timed metadata tracks to '\(path)': \(error.localizedDescription)",
                             isRetryable: true)
        }
    }

    private static func appendTracks(_ tracks: [TimedMetadataTrack], to path: String, quickTime: Bool) throws {
        typealias B = QuickTimeBoxes
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw MediaError(.writeFailed, "cannot reopen '\(path)' to add timed metadata")
        }
        defer { try? handle.close() }
        let boxes = try B.topLevel(handle)
        guard let moovBox = boxes.last, moovBox.type == "moov" else {
            throw MediaError(.internalError, "'\(path)' does not end with its moov box; cannot add timed metadata")
        }
        try handle.seek(toOffset: UInt64(moovBox.start))
        guard let moov = try handle.read(upToCount: moovBox.size), moov.count == moovBox.size else {
            throw MediaError(.writeFailed, "cannot read the index of '\(path)'")
        }
        let children = B.children(moov, moovBox.headerSize..<moov.count)
        guard let mvhd = children.first(where: { $0.type == "mvhd" }) else {
            throw MediaError(.internalError, "'\(path)' has no movie header")
        }
        let version = moov[mvhd.payload.lowerBound]
        let movieTimescale = Int64(B.u32(moov, mvhd.payload.lowerBound + (version == 1 ? 20 : 12)))
        let nextIDOffset = mvhd.payload.lowerBound + (version == 1 ? 108 : 96)
        var nextTrackID = B.u32(moov, nextIDOffset)
        let videoTrackID = children.filter { $0.type == "trak" }.compactMap { trak -> UInt32? in
            guard let mdia = B.child(moov, trak, "mdia"), let hdlr = B.child(moov, mdia, "hdlr"),
                  B.fourCC(moov, hdlr.payload.lowerBound + 8) == "vide", let tkhd = B.child(moov, trak, "tkhd") else { return nil }
            return B.u32(moov, tkhd.payload.lowerBound + (moov[tkhd.payload.lowerBound] == 1 ? 20 : 12))
        }.first

        // New media data: one chunk per track, each laid out to the movie's end (an empty sample
        // after the last: FFmpeg's demuxer stretches a track's last sample to the movie's end).
        let movieDuration = Int64(version == 1 ? Int64(bitPattern: B.u64(moov, mvhd.payload.lowerBound + 24))
                                               : Int64(B.u32(moov, mvhd.payload.lowerBound + 16)))
        let laidOut = tracks.map { track -> [TimedMetadataTrack.Sample] in
            var samples = track.contiguousSamples
            let end = samples.last.map { $0.time + $0.duration } ?? 0
            let movieEnd = MediaTime.rescale(movieDuration, multiplier: Int64(track.timescale), divisor: max(1, movieTimescale))
            if movieEnd > end { samples.append(TimedMetadataTrack.Sample(time: end, duration: movieEnd - end, data: Data())) }
            return samples
        }
        let payload = laidOut.reduce(0) { $0 + $1.reduce(0) { $0 + $1.data.count } }
        let large = payload + 8 > Int(UInt32.max)
        let mdatStart = moovBox.start
        var offset = mdatStart + (large ? 16 : 8)
        var chunkOffsets: [Int] = []
        try handle.truncate(atOffset: UInt64(mdatStart))
        try handle.seek(toOffset: UInt64(mdatStart))
        var header = BoxWriter()
        if large {
            header.u32(1)
            header.fourCC("mdat")
            header.u64(UInt64(payload + 16))
        } else {
            header.u32(UInt32(payload + 8))
            header.fourCC("mdat")
        }
        try handle.write(contentsOf: header.data)
        for samples in laidOut {
            chunkOffsets.append(offset)
            for s in samples where !s.data.isEmpty { try handle.write(contentsOf: s.data) }
            offset += samples.reduce(0) { $0 + $1.data.count }
        }

        // The new index: the old boxes, the movie header's next track ID advanced, the new traks.
        var traks = BoxWriter()
        var longest: Int64 = 0
        for (i, track) in tracks.enumerated() {
            let samples = laidOut[i]
            let mediaDuration = samples.reduce(Int64(0)) { $0 + $1.duration }
            let movieDuration = MediaTime.rescale(mediaDuration, multiplier: movieTimescale, divisor: Int64(track.timescale))
            longest = max(longest, movieDuration)
            writeTrak(&traks, track: track, samples: samples, trackID: nextTrackID, movieDuration: movieDuration,
                      mediaDuration: mediaDuration, chunkOffset: chunkOffsets[i], videoTrackID: videoTrackID,
                      quickTime: quickTime)
            nextTrackID += 1
        }
        var body = Data(moov[moovBox.headerSize..<moov.count])
        let nextIDInBody = nextIDOffset - moovBox.headerSize
        body.replaceSubrange(nextIDInBody..<(nextIDInBody + 4), with: withUnsafeBytes(of: nextTrackID.bigEndian) { Data($0) })
        let durationOffset = mvhd.payload.lowerBound + (version == 1 ? 24 : 16) - moovBox.headerSize
        if version == 0 {
            let current = Int64(B.u32(moov, durationOffset + moovBox.headerSize))
            if longest > current, longest <= Int64(UInt32.max) {
                body.replaceSubrange(durationOffset..<(durationOffset + 4),
                                     with: withUnsafeBytes(of: UInt32(longest).bigEndian) { Data($0) })
            }
        }
        // New traks go after the last existing one (before udta and the rest).
        let lastTrak = children.last { $0.type == "trak" }
        let insertAt = (lastTrak.map { $0.start + $0.size } ?? moov.count) - moovBox.headerSize
        body.insert(contentsOf: traks.data, at: insertAt)
        var newMoov = BoxWriter()
        newMoov.u32(UInt32(body.count + 8))
        newMoov.fourCC("moov")
        newMoov.bytes(body)
        try handle.write(contentsOf: newMoov.data)
    }

    private static func writeTrak(_ w: inout BoxWriter, track: TimedMetadataTrack, samples: [TimedMetadataTrack.Sample],
                                  trackID: UInt32, movieDuration: Int64, mediaDuration: Int64, chunkOffset: Int,
                                  videoTrackID: UInt32?, quickTime: Bool) {
        w.box("trak") { w in
            w.fullBox("tkhd", flags: 0x3) { w in
                w.u32(0); w.u32(0)
                w.u32(trackID)
                w.u32(0)
                w.u32(UInt32(clamping: movieDuration))
                w.zeros(8)
                w.u16(0); w.u16(0); w.u16(0); w.u16(0)  // layer, alternate group, volume, reserved
                for v: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { w.u32(v) }
                w.u32(0); w.u32(0)
            }
            if track.describesVideo, let videoTrackID {
                w.box("tref") { w in w.box("cdsc") { w in w.u32(videoTrackID) } }
            }
            w.box("mdia") { w in
                w.fullBox("mdhd") { w in
                    w.u32(0); w.u32(0)
                    w.u32(UInt32(track.timescale))
                    w.u32(UInt32(clamping: mediaDuration))
                    w.u16(packedLanguage(track.language))
                    w.u16(0)
                }
                w.fullBox("hdlr") { w in
                    w.fourCC(quickTime ? "mhlr" : "\0\0\0\0")
                    w.fourCC("meta")
                    w.zeros(12)
                    let name = Data(track.handlerName.utf8.prefix(250))
                    if quickTime {
                        w.u8(UInt8(name.count))
                        w.bytes(name)
                    } else {
                        w.bytes(name)
                        w.u8(0)
                    }
                }
                w.box("minf") { w in
                    if quickTime {
                        w.box("gmhd") { w in
                            w.fullBox("gmin") { w in
                                w.u16(0x40); w.u16(0x8000); w.u16(0x8000); w.u16(0x8000); w.u16(0); w.u16(0)
                            }
                        }
                    } else {
                        w.fullBox("nmhd") { _ in }
                    }
                    w.box("dinf") { w in
                        w.fullBox("dref") { w in
                            w.u32(1)
                            w.fullBox("url ", flags: 1) { _ in }
                        }
                    }
                    w.box("stbl") { w in
                        w.fullBox("stsd") { w in
                            w.u32(1)
                            w.bytes(track.sampleEntry)
                        }
                        var runs: [(count: UInt32, delta: UInt32)] = []
                        for s in samples {
                            let d = UInt32(clamping: s.duration)
                            if let last = runs.last, last.delta == d { runs[runs.count - 1].count += 1 } else { runs.append((1, d)) }
                        }
                        w.fullBox("stts") { w in
                            w.u32(UInt32(runs.count))
                            for r in runs { w.u32(r.count); w.u32(r.delta) }
                        }
                        w.fullBox("stsc") { w in
                            w.u32(1)
                            w.u32(1); w.u32(UInt32(samples.count)); w.u32(1)
                        }
                        w.fullBox("stsz") { w in
                            w.u32(0)
                            w.u32(UInt32(samples.count))
                            for s in samples { w.u32(UInt32(s.data.count)) }
                        }
                        if chunkOffset > Int(UInt32.max) {
                            w.fullBox("co64") { w in w.u32(1); w.u64(UInt64(chunkOffset)) }
                        } else {
                            w.fullBox("stco") { w in w.u32(1); w.u32(UInt32(chunkOffset)) }
                        }
                    }
                }
            }
        }
    }

    /// ISO 639-2 packed in 15 bits (`und` when unknown).
    static func packedLanguage(_ code: String?) -> UInt16 {
        let letters = Array((code ?? "und").lowercased().utf8)
        guard letters.count == 3, letters.allSatisfy({ (0x61...0x7A).contains($0) }) else { return 0x55C4 }
        return letters.reduce(UInt16(0)) { $0 << 5 | UInt16($1 - 0x60) }
    }

    /// Rewrites the file with its `moov` first (after `ftyp`), shifting every chunk offset.
    static func moveIndexToFront(_ path: String) throws {
        typealias B = QuickTimeBoxes
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw MediaError(.writeFailed, "cannot reopen '\(path)' to move its index first")
        }
        defer { try? handle.close() }
        let boxes = try B.topLevel(handle)
        guard let moovIndex = boxes.firstIndex(where: { $0.type == "moov" }) else { return }
        let moovBox = boxes[moovIndex]
        let firstMedia = boxes.firstIndex { $0.type == "mdat" }
        if let firstMedia, moovIndex < firstMedia { return }
        try handle.seek(toOffset: UInt64(moovBox.start))
        guard var moov = try handle.read(upToCount: moovBox.size), moov.count == moovBox.size else {
            throw MediaError(.writeFailed, "cannot read the index of '\(path)'")
        }
        let head = boxes.prefix { $0.type == "ftyp" }
        let headEnd = head.last.map { $0.start + $0.size } ?? 0
        let shift = moovBox.size
        // Shift every chunk offset by the moov's size.
        for trak in B.children(moov, moovBox.headerSize..<moov.count) where trak.type == "trak" {
            guard let mdia = B.child(moov, trak, "mdia"), let minf = B.child(moov, mdia, "minf"),
                  let stbl = B.child(moov, minf, "stbl") else { continue }
            if let stco = B.child(moov, stbl, "stco") {
                let count = Int(B.u32(moov, stco.payload.lowerBound + 4))
                for i in 0..<count {
                    let o = stco.payload.lowerBound + 8 + 4 * i
                    let value = Int(B.u32(moov, o)) + shift
                    guard value <= Int(UInt32.max) else {
                        throw MediaError(.writeFailed, "'\(path)' is too large to put its index first with 32-bit offsets")
                    }
                    moov.replaceSubrange(o..<(o + 4), with: withUnsafeBytes(of: UInt32(value).bigEndian) { Data($0) })
                }
            }
            if let co64 = B.child(moov, stbl, "co64") {
                let count = Int(B.u32(moov, co64.payload.lowerBound + 4))
                for i in 0..<count {
                    let o = co64.payload.lowerBound + 8 + 8 * i
                    let value = B.u64(moov, o) + UInt64(shift)
                    moov.replaceSubrange(o..<(o + 8), with: withUnsafeBytes(of: value.bigEndian) { Data($0) })
                }
            }
        }
        let temporary = path + ".faststart"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let out = FileHandle(forWritingAtPath: temporary) else {
            throw MediaError(.writeFailed, "cannot write beside '\(path)' to move its index first")
        }
        var moved = false
        defer {
            try? out.close()
            if !moved { unlink(temporary) }
        }
        try handle.seek(toOffset: 0)
        if headEnd > 0, let bytes = try handle.read(upToCount: headEnd) { try out.write(contentsOf: bytes) }
        try out.write(contentsOf: moov)
        // Everything between the head and the moov (the media), then whatever followed the moov.
        try copy(handle, from: headEnd, to: moovBox.start, into: out)
        try copy(handle, from: moovBox.start + moovBox.size, to: Int(try handle.seekToEnd()), into: out)
        try out.synchronize()
        guard rename(temporary, path) == 0 else {
            throw MediaError(.writeFailed, "cannot replace '\(path)' with its fast-start copy")
        }
        moved = true
    }

    private static func copy(_ from: FileHandle, from start: Int, to end: Int, into out: FileHandle) throws {
        var o = start
        try from.seek(toOffset: UInt64(o))
        while o < end {
            let n = min(4 << 20, end - o)
            guard let chunk = try from.read(upToCount: n), !chunk.isEmpty else { break }
            try out.write(contentsOf: chunk)
            o += chunk.count
        }
    }
}
