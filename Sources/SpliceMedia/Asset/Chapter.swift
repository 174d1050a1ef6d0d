internal import CFFmpeg

/// A chapter mark: a titled span of the asset, in asset time.
public struct Chapter: Sendable, Codable, Hashable {
    public var start: MediaTime
    public var end: MediaTime
    /// The chapter's tags ("title" and whatever else the container kept).
    public var metadata: [String: String]

    public init(start: MediaTime, end: MediaTime, metadata: [String: String]) {
        self.start = start
        self.end = end
        self.metadata = metadata
    }

    init(_ chapter: UnsafeMutablePointer<AVChapter>, origin: MediaTime) {
        let tb = Rational(chapter.pointee.time_base)
        start = MediaTime(value: chapter.pointee.start, timeBase: tb) - origin
        end = MediaTime(value: chapter.pointee.end, timeBase: tb) - origin
        metadata = Dictionary(fromAVDictionary: chapter.pointee.metadata)
    }

    /// The chapters of `chapters` that overlap `[zero, end)`, moved so `zero` is time 0 and
    /// clipped to the span (a chapter that began before the cut begins at 0).
    static func retimed(_ chapters: [Chapter], zero: MediaTime, end: MediaTime?) -> [Chapter] {
        chapters.compactMap { c in
            let s = MediaTime.max(c.start, zero)
            let e = end.map { MediaTime.min(c.end, $0) } ?? c.end
            guard e > s else { return nil }
            return Chapter(start: s - zero, end: e - zero, metadata: c.metadata)
        }
    }
}

extension Muxer {
    /// Gives the output `chapters` (times in output time); call before writing the header.
    /// The muxer frees them with its context.
    func setChapters(_ chapters: [Chapter]) {
        for (i, chapter) in chapters.enumerated() {
            guard let raw = av_mallocz(MemoryLayout<AVChapter>.size) else { fatalError("out of memory") }
            let c = raw.assumingMemoryBound(to: AVChapter.self)
            let timescale = MediaTime.commonTimescale(chapter.start.timescale, chapter.end.timescale)
            c.pointee.id = Int64(i + 1)
            c.pointee.time_base = AVRational(num: 1, den: timescale)
            c.pointee.start = chapter.start.converted(to: timescale).value
            c.pointee.end = chapter.end.converted(to: timescale).value
            for (k, v) in chapter.metadata { av_dict_set(&c.pointee.metadata, k, v, 0) }
            withUnsafeMutablePointer(to: &context.pointee.chapters) { array in
                array.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) { slot in
                    var count = Int32(context.pointee.nb_chapters)
                    av_dynarray_add(slot, &count, raw)
                    context.pointee.nb_chapters = UInt32(count)
                }
            }
        }
    }
}
