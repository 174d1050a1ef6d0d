public import Foundation

/// One timed annotation: a text value valid from ``time`` for ``duration`` (asset time of the
/// output). A list of them becomes a timed-metadata track beside the video, the way Apple's
/// AAPLTimedAnnotationWriter sample writes `AVTimedMetadataGroup`s: a `mebx` track whose one key
/// is ``TimedAnnotation/key`` (UTF-8 values), associated with the video track (`cdsc`).
///
/// In JSON, times are seconds as a number (`1.5`), text (`"1.5"`, `"00:01:02.5"`, `"3/2"`) or
/// an exact `{"value": 3, "timescale": 2}`:
///
///     [{"time": 0, "duration": 2.5, "value": "intro"}, {"time": "2.5", "duration": 1, "value": "title"}]
public struct TimedAnnotation: Sendable, Hashable, Codable {
    public var time: MediaTime
    public var duration: MediaTime
    public var value: String

    /// The metadata key (namespace `mdta`) annotation values are written under.
    public static let key = "com.splice.annotation"
    /// At most this many annotations, and this much text, travel in one request (a job's request
    /// crosses the cluster's wire, whose messages stop at 4 MiB).
    public static let maximumCount = 10_000
    public static let maximumTextBytes = 1 << 20

    public init(time: MediaTime, duration: MediaTime, value: String) {
        self.time = time
        self.duration = duration
        self.value = value
    }

    private enum CodingKeys: String, CodingKey { case time, duration, value }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        time = try Self.decodeTime(c, .time)
        duration = try Self.decodeTime(c, .duration)
        value = try c.decode(String.self, forKey: .value)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(time, forKey: .time)
        try c.encode(duration, forKey: .duration)
        try c.encode(value, forKey: .value)
    }

    /// A time as an exact object, a decimal number (read as its decimal digits, never through
    /// floating point) or text MediaTime parses.
    private static func decodeTime(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> MediaTime {
        if let exact = try? c.decode(MediaTime.self, forKey: key) { return exact }
        let text: String
        if let s = try? c.decode(String.self, forKey: key) {
            text = s
        } else {
            let number = try c.decode(Decimal.self, forKey: key)
            text = NSDecimalNumber(decimal: number).stringValue
        }
        guard let t = MediaTime(parsing: text) ?? Rational(parsing: text).map({ MediaTime(value: Int64($0.numerator), timescale: $0.denominator) }) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not a time: \(text)")
        }
        return t
    }

    /// Reads a JSON file of annotations; throws ``SettingsError`` naming the file and the problem.
    public static func load(contentsOf url: URL) throws -> [TimedAnnotation] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw SettingsError(field: "annotations", value: url.path, allowed: "a readable JSON file")
        }
        let list: [TimedAnnotation]
        do { list = try JSONDecoder().decode([TimedAnnotation].self, from: data) } catch {
            throw SettingsError(field: "annotations", value: url.path,
                                allowed: "a JSON array of {\"time\": seconds, \"duration\": seconds, \"value\": text}")
        }
        try validate(list)
        return list
    }

    /// Checks a list: times not negative, durations positive, not too many.
    public static func validate(_ list: [TimedAnnotation]) throws(SettingsError) {
        guard list.count <= maximumCount else {
            throw SettingsError(field: "annotations", value: "\(list.count) annotations", allowed: "at most \(maximumCount)")
        }
        let text = list.reduce(0) { $0 + $1.value.utf8.count }
        guard text <= maximumTextBytes else {
            throw SettingsError(field: "annotations", value: "\(text) bytes of text", allowed: "at most \(maximumTextBytes) bytes")
        }
        for a in list {
            if a.time < .zero { throw SettingsError(field: "annotations", value: "time \(a.time)", allowed: "zero or later") }
            if a.duration <= .zero {
                throw SettingsError(field: "annotations", value: "duration \(a.duration)", allowed: "longer than zero")
            }
        }
    }

    /// The annotations as a timed-metadata track in `timescale` units, times moved by `zero`
    /// (annotations before it are cut) and cut at `end`.
    static func track(_ list: [TimedAnnotation], zero: MediaTime = .zero, end: MediaTime? = nil) -> TimedMetadataTrack {
        let sorted = list.sorted { $0.time < $1.time }
        var timescale: Int32 = 1000
        for a in sorted {
            let s = MediaTime.commonTimescale(MediaTime.commonTimescale(timescale, a.time.timescale), a.duration.timescale)
            if s <= 1_000_000 { timescale = s }
        }
        let samples: [TimedMetadataTrack.Sample] = sorted.compactMap { a in
            var start = a.time - zero, stop = a.time + a.duration - zero
            if let end { stop = MediaTime.min(stop, end - zero) }
            start = MediaTime.max(start, .zero)
            guard stop > start else { return nil }
            var item = BoxWriter()
            let value = Data(a.value.utf8)
            item.u32(UInt32(8 + value.count))
            item.u32(1)  // local key ID 1 (see sampleEntry)
            item.bytes(value)
            let t = start.converted(to: timescale).value
            return TimedMetadataTrack.Sample(time: t, duration: stop.converted(to: timescale).value - t, data: item.data)
        }
        return TimedMetadataTrack(sampleEntry: sampleEntry, handlerName: "Splice Timed Annotations", language: nil,
                                  timescale: timescale, samples: samples, describesVideo: true)
    }

    /// A boxed-metadata sample description (`mebx`) with one key: local ID 1 = `mdta`
    /// ``key``, well-known type 1 (UTF-8).
    static var sampleEntry: Data {
        var w = BoxWriter()
        w.box("mebx") { w in
            w.zeros(6)
            w.u16(1)  // data reference index
            w.box("keys") { w in
                w.box("\0\0\0\u{1}") { w in
                    w.box("keyd") { w in
                        w.fourCC("mdta")
                        w.bytes(Data(key.utf8))
                    }
                    w.box("dtyp") { w in
                        w.u32(0)  // well-known types
                        w.u32(1)  // UTF-8
                    }
                }
            }
        }
        return w.data
    }
}
