import Foundation

/// What ffprobe says about a file: the independent oracle for everything Splice writes.
public struct Probe: Sendable {
    /// One stream as ffprobe reports it.
    public struct Stream: Sendable, Decodable {
        public var index: Int
        public var codec_type: String
        public var codec_name: String?
        public var width: Int?
        public var height: Int?
        public var pix_fmt: String?
        public var sample_rate: String?
        public var channels: Int?
        public var channel_layout: String?
        public var r_frame_rate: String?
        public var avg_frame_rate: String?
        public var time_base: String?
        public var start_pts: Int64?
        public var start_time: String?
        public var duration: String?
        public var duration_ts: Int64?
        public var nb_frames: String?
        public var nb_read_frames: String?
        public var sample_aspect_ratio: String?
        public var profile: String?
        public var side_data_list: [SideData]?
        public var tags: [String: String]?
        public var codec_tag_string: String?
        public var color_range: String?
        public var color_space: String?
        public var color_transfer: String?
        public var color_primaries: String?
        public var disposition: [String: Int]?

        public struct SideData: Sendable, Decodable {
            public var side_data_type: String?
            public var rotation: Int?
            public var max_content: Int?
            public var max_luminance: String?
        }

        /// The side data entry of a type ("Mastering display metadata").
        public func sideData(_ type: String) -> SideData? { side_data_list?.first { $0.side_data_type == type } }

        /// ffprobe's display-matrix rotation (counter-clockwise degrees), 0 when none.
        public var rotation: Int { side_data_list?.compactMap(\.rotation).first ?? 0 }
        public var sampleRate: Int? { sample_rate.flatMap { Int($0) } }
        public var readFrames: Int? { nb_read_frames.flatMap { Int($0) } }
        /// Duration in microseconds, parsed from ffprobe's decimal text without floating point.
        public var durationMicroseconds: Int64? { duration.flatMap(Probe.microseconds) }
        public var startMicroseconds: Int64? { start_time.flatMap(Probe.microseconds) }
    }

    public struct Format: Sendable, Decodable {
        public var format_name: String
        public var duration: String?
        public var tags: [String: String]?
    }

    /// One packet.
    public struct Packet: Sendable, Decodable {
        public var stream_index: Int
        public var pts: Int64?
        public var dts: Int64?
        public var duration: Int64?
        public var flags: String
        public var size: String?
        public var isKeyframe: Bool { flags.hasPrefix("K") }
    }

    /// One decoded frame's timing.
    public struct FrameInfo: Sendable, Decodable {
        public var stream_index: Int
        public var pts: Int64?
        public var best_effort_timestamp: Int64?
        public var nb_samples: Int?
    }

    public var streams: [Stream]
    public var format: Format

    private struct Document: Decodable {
        var streams: [Stream]?
        var format: Format?
        var packets: [Packet]?
        var frames: [FrameInfo]?
    }

    /// Probes streams and format; with `countFrames`, decodes to count frames (`nb_read_frames`).
    public init(_ path: String, countFrames: Bool = false) async throws {
        self = try await ExternalTool.offPool { try Probe(blocking: path, countFrames: countFrames) }
    }

    private init(blocking path: String, countFrames: Bool) throws {
        var args = ["-v", "error", "-print_format", "json", "-show_streams", "-show_format"]
        if countFrames { args.append("-count_frames") }
        let doc = try Probe.document(args + [path])
        streams = doc.streams ?? []
        format = doc.format ?? Format(format_name: "?", duration: nil, tags: nil)
    }

    /// The first stream of a type ("video", "audio").
    public func first(_ type: String) -> Stream? { streams.first { $0.codec_type == type } }

    /// Every stream of a type, in order.
    public func all(_ type: String) -> [Stream] { streams.filter { $0.codec_type == type } }

    /// Chapter marks as ffprobe reads them: start and end in microseconds, and title.
    public static func chapters(_ path: String) async throws -> [(start: Int64, end: Int64, title: String?)] {
        try await ExternalTool.offPool {
            struct Chapter: Decodable { var start_time: String; var end_time: String; var tags: [String: String]? }
            struct Doc: Decodable { var chapters: [Chapter] }
            let out = try ExternalTool.checkBlocking("ffprobe", ["-v", "error", "-print_format", "json", "-show_chapters", path])
            return try JSONDecoder().decode(Doc.self, from: out.stdout).chapters.map {
                (microseconds($0.start_time) ?? -1, microseconds($0.end_time) ?? -1, $0.tags?["title"])
            }
        }
    }

    /// Every packet of the streams `select` picks ("v:0", "a:0").
    public static func packets(_ path: String, select: String) async throws -> [Packet] {
        try await ExternalTool.offPool { try packetsBlocking(path, select: select) }
    }

    private static func packetsBlocking(_ path: String, select: String) throws -> [Packet] {
        try document(["-v", "error", "-print_format", "json", "-select_streams", select,
                      "-show_entries", "packet=stream_index,pts,dts,duration,flags,size", path]).packets ?? []
    }

    /// The payload digest of every packet of `map` (as `ffmpeg -map`), in order: equal lists mean
    /// bit-identical packets.
    public static func packetDigests(_ path: String, map: String) async throws -> [String] {
        let out = try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", map, "-c", "copy",
                                                      "-f", "framemd5", "-"])
        return out.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Every decoded frame's timing for `select`.
    public static func frames(_ path: String, select: String) async throws -> [FrameInfo] {
        try await ExternalTool.offPool { try framesBlocking(path, select: select) }
    }

    private static func framesBlocking(_ path: String, select: String) throws -> [FrameInfo] {
        try document(["-v", "error", "-print_format", "json", "-select_streams", select,
                      "-show_entries", "frame=stream_index,pts,best_effort_timestamp,nb_samples", path]).frames ?? []
    }

    private static func document(_ args: [String]) throws -> Document {
        let out = try ExternalTool.checkBlocking("ffprobe", args)
        return try JSONDecoder().decode(Document.self, from: out.stdout)
    }

    /// "12.345678" → 12345678 (µs), exactly; nil for "N/A".
    public static func microseconds(_ text: String) -> Int64? {
        let negative = text.hasPrefix("-")
        let body = negative ? String(text.dropFirst()) : text
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int64(parts[0]) else { return nil }
        var frac = parts.count > 1 ? String(parts[1].prefix(6)) : ""
        while frac.count < 6 { frac += "0" }
        guard let f = Int64(frac) else { return nil }
        return (negative ? -1 : 1) * (whole * 1_000_000 + f)
    }
}
