import Foundation

/// The few parts of the QuickTime/ISO box structure Splice reads and writes itself: FFmpeg 5.1's
/// mov muxer cannot write timed-metadata tracks (`mebx`, `mett`: it writes an empty sample
/// description and logs "Unknown hdlr_type"), and its demuxer does not expose their sample
/// descriptions. Boxes are read from the `moov` only; media data is never loaded.
enum QuickTimeBoxes {
    /// One box: its type and where its header and payload are (offsets in the buffer or file).
    struct Box: Sendable {
        var type: String
        var start: Int
        var size: Int
        var headerSize: Int
        var payload: Range<Int> { (start + headerSize)..<(start + size) }
        var range: Range<Int> { start..<(start + size) }
    }

    /// Boxes laid end to end in `data[range]`; stops at the first malformed header.
    static func children(_ data: Data, _ range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var o = range.lowerBound
        while o + 8 <= range.upperBound {
            var size = Int(u32(data, o))
            let type = fourCC(data, o + 4)
            var header = 8
            if size == 1 {
                guard o + 16 <= range.upperBound else { break }
                size = Int(u64(data, o + 8))
                header = 16
            }
            if size == 0 { size = range.upperBound - o }
            guard size >= header, o + size <= range.upperBound else { break }
            boxes.append(Box(type: type, start: o, size: size, headerSize: header))
            o += size
        }
        return boxes
    }

    /// The first child of `box` of `type`.
    static func child(_ data: Data, _ box: Box, _ type: String, skip: Int = 0) -> Box? {
        children(data, (box.payload.lowerBound + skip)..<box.payload.upperBound).first { $0.type == type }
    }

    /// The top-level boxes of a file, read by seeking from header to header.
    static func topLevel(_ handle: FileHandle) throws -> [Box] {
        let end = Int(try handle.seekToEnd())
        return try topLevel(size: end) { offset, count in
            try handle.seek(toOffset: UInt64(offset))
            return try handle.read(upToCount: count) ?? Data()
        }
    }

    /// The top-level boxes of `size` bytes that `read(offset, count)` reads (up to `count` at `offset`).
    static func topLevel(size end: Int, read: (Int, Int) throws -> Data) rethrows -> [Box] {
        var boxes: [Box] = []
        var o = 0
        while o + 8 <= end {
            let head = try read(o, 16)
            guard head.count >= 8 else { break }
            var size = Int(u32(head, 0))
            var header = 8
            if size == 1 {
                guard head.count >= 16 else { break }
                size = Int(u64(head, 8))
                header = 16
            }
            if size == 0 { size = end - o }
            guard size >= header, o + size <= end else { break }
            boxes.append(Box(type: fourCC(head, 4), start: o, size: size, headerSize: header))
            o += size
        }
        return boxes
    }

    // MARK: Big-endian fields

    static func u16(_ d: Data, _ o: Int) -> UInt16 { UInt16(d[d.startIndex + o]) << 8 | UInt16(d[d.startIndex + o + 1]) }
    static func u32(_ d: Data, _ o: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(d[d.startIndex + o + $1]) }
    }
    static func u64(_ d: Data, _ o: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(d[d.startIndex + o + $1]) }
    }
    static func fourCC(_ d: Data, _ o: Int) -> String {
        String(decoding: d[(d.startIndex + o)..<(d.startIndex + o + 4)], as: UTF8.self)
    }
}

/// Builds boxes into a byte buffer.
struct BoxWriter {
    private(set) var data = Data()

    mutating func u8(_ v: UInt8) { data.append(v) }
    mutating func u16(_ v: UInt16) { data.append(contentsOf: [UInt8(v >> 8), UInt8(v & 0xFF)]) }
    mutating func u32(_ v: UInt32) { data.append(contentsOf: (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) }) }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func u64(_ v: UInt64) { data.append(contentsOf: (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) }) }
    mutating func fourCC(_ s: String) {
        let bytes = Array(s.utf8)
        precondition(bytes.count == 4, "a box type has four bytes")
        data.append(contentsOf: bytes)
    }
    mutating func bytes(_ d: Data) { data.append(d) }
    mutating func zeros(_ n: Int) { data.append(contentsOf: [UInt8](repeating: 0, count: n)) }

    /// A box whose payload `body` writes; the size is filled in afterwards.
    mutating func box(_ type: String, _ body: (inout BoxWriter) -> Void) {
        var inner = BoxWriter()
        body(&inner)
        u32(UInt32(8 + inner.data.count))
        fourCC(type)
        data.append(inner.data)
    }

    /// A full box (version and flags first).
    mutating func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout BoxWriter) -> Void) {
        box(type) { w in
            w.u32(UInt32(version) << 24 | (flags & 0xFF_FFFF))
            body(&w)
        }
    }
}

/// What Splice needs to know about one track of a QuickTime/MP4 file, read from its `trak`.
struct QuickTimeTrackInfo: Sendable, Hashable {
    var trackID: Int
    /// `hdlr` handler type: "vide", "soun", "meta", "text", "sbtl", "tmcd".
    var handler: String
    var handlerName: String
    /// Media timescale (`mdhd`).
    var timescale: Int
    /// ISO 639-2 language from `mdhd`, when set.
    var language: String?
    /// The first sample description, whole (size and type included): copied as it is.
    var sampleEntry: Data
    var sampleEntryType: String
    /// Track references (`tref`): reference type → referenced track IDs.
    var references: [String: [Int]]
}

extension QuickTimeTrackInfo {
    /// Every track of the file at `location` — a path, or a location in storage (nil when it is
    /// not a QuickTime/MP4 file with a `moov`, or cannot be read).
    static func read(location: String) -> [QuickTimeTrackInfo]? {
        let moov: Data?
        if let storage = try? StorageRegistry.storage(for: location) {
            guard let source = try? storage.openSource(location) else { return nil }
            let read = { (offset: Int, count: Int) throws -> Data in
                var data = Data(count: count)
                let n = try data.withUnsafeMutableBytes { try source.read(at: Int64(offset), into: $0) }
                return data.prefix(n)
            }
            guard let box = (try? QuickTimeBoxes.topLevel(size: Int(source.size), read: read))?.first(where: { $0.type == "moov" })
            else { return nil }
            moov = try? Self.readWhole(box.size) { try read(box.start + $0, $1) }
        } else {
            guard let handle = FileHandle(forReadingAtPath: location) else { return nil }
            defer { try? handle.close() }
            guard let boxes = try? QuickTimeBoxes.topLevel(handle),
                  let box = boxes.first(where: { $0.type == "moov" }),
                  (try? handle.seek(toOffset: UInt64(box.start))) != nil else { return nil }
            moov = try? handle.read(upToCount: box.size)
        }
        guard let data = moov, data.count >= 8, QuickTimeBoxes.fourCC(data, 4) == "moov" else { return nil }
        let header = QuickTimeBoxes.u32(data, 0) == 1 ? 16 : 8
        return QuickTimeBoxes.children(data, header..<data.count)
            .filter { $0.type == "trak" }
            .compactMap { parse(data, trak: $0) }
    }

    /// `size` bytes read in pieces (a storage read may return fewer than asked).
    private static func readWhole(_ size: Int, _ read: (Int, Int) throws -> Data) throws -> Data {
        var data = Data()
        while data.count < size {
            let piece = try read(data.count, size - data.count)
            if piece.isEmpty { break }
            data.append(piece)
        }
        return data
    }

    private static func parse(_ d: Data, trak: QuickTimeBoxes.Box) -> QuickTimeTrackInfo? {
        typealias B = QuickTimeBoxes
        guard let tkhd = B.child(d, trak, "tkhd"), let mdia = B.child(d, trak, "mdia"),
              let mdhd = B.child(d, mdia, "mdhd"), let hdlr = B.child(d, mdia, "hdlr"),
              let minf = B.child(d, mdia, "minf"), let stbl = B.child(d, minf, "stbl"),
              let stsd = B.child(d, stbl, "stsd") else { return nil }
        let tkhdVersion = d[tkhd.payload.lowerBound]
        let trackID = Int(B.u32(d, tkhd.payload.lowerBound + (tkhdVersion == 1 ? 20 : 12)))
        let mdhdVersion = d[mdhd.payload.lowerBound]
        let mdhdBody = mdhd.payload.lowerBound + (mdhdVersion == 1 ? 20 : 12)
        let timescale = Int(B.u32(d, mdhdBody))
        let packed = B.u16(d, mdhdBody + (mdhdVersion == 1 ? 12 : 8))
        var language: String?
        if packed != 0 {
            let chars = [(packed >> 10) & 31, (packed >> 5) & 31, packed & 31].map { Character(UnicodeScalar(UInt8($0 + 0x60))) }
            let text = String(chars)
            if text != "und" && chars.allSatisfy({ $0.isLetter }) { language = text }
        }
        let handler = B.fourCC(d, hdlr.payload.lowerBound + 8)
        let nameStart = hdlr.payload.lowerBound + 24
        var nameBytes = nameStart < hdlr.payload.upperBound ? Array(d[nameStart..<hdlr.payload.upperBound]) : []
        if let first = nameBytes.first, Int(first) == nameBytes.count - 1 { nameBytes.removeFirst() }  // Pascal string (QuickTime)
        let handlerName = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
        let entries = B.children(d, (stsd.payload.lowerBound + 8)..<stsd.payload.upperBound)
        guard let entry = entries.first else { return nil }
        var references: [String: [Int]] = [:]
        if let tref = B.child(d, trak, "tref") {
            for ref in B.children(d, tref.payload) {
                references[ref.type] = stride(from: ref.payload.lowerBound, to: ref.payload.upperBound - 3, by: 4)
                    .map { Int(B.u32(d, $0)) }
            }
        }
        return QuickTimeTrackInfo(trackID: trackID, handler: handler, handlerName: handlerName, timescale: timescale,
                                  language: language, sampleEntry: Data(d[entry.range]), sampleEntryType: entry.type,
                                  references: references)
    }
}
