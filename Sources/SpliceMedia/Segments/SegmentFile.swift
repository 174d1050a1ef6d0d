internal import CFFmpeg
import Foundation
import SpliceCore

/// Splice's segment file: the intermediate container between a segment export and the stitcher.
///
/// Why not an FFmpeg container: segments must carry timestamps exactly as the encoders produced
/// them — integers in each stream's own time base, negative ones included (AAC priming packets
/// start at −1024), decode times kept for B-frames. NUT rejects negative timestamps and loses
/// decode times when they are absent; Matroska rounds to 1 ms; MP4/MOV turn priming into edit
/// lists that a demuxer then reapplies. So a segment file is simply:
///
///     "SPLSEG1\n"  u32 length  header JSON (plan id, segment index, codec parameters per stream)
///     records: u8 kind=1  u8 stream  u8 flags  u8 side-data count  i64 pts  i64 dts  i64 duration
///              u32 size  [u32 type  u32 size  bytes]*  payload          (little endian)
///     u8 kind=2  trailer JSON (packet counts, video pts in file order)  u32 length  "SPLSEND\n"
///
/// The trailer's end marker makes a truncated file (a worker killed mid-write) detectable, and
/// the whole file's SHA-256 is what workers report and the stitcher checks.
enum SegmentFile {
    static let magic = Array("SPLSEG1\n".utf8)
    static let endMagic = Array("SPLSEND\n".utf8)
    static let packetRecord: UInt8 = 1
    static let endRecord: UInt8 = 2
    static let recordHeaderSize = 4 + 8 + 8 + 8 + 4

    /// Header and trailer JSON with sorted keys: the same segment encoded twice is the same file,
    /// byte for byte (Foundation orders unsorted keys differently from one process to the next).
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    struct Header: Codable, Sendable {
        var version = 1
        var planID: String
        var index: Int
        var streams: [CodecParameters]
        /// Set in a source excerpt (``SourceExcerpt``): the probed source and what its streams
        /// carry beyond their codec parameters. Absent from encoded segments.
        var source: SourceExcerpt.Origin?
    }

    struct Trailer: Codable, Sendable {
        var packetCounts: [Int]
        /// Presentation times of the video stream's packets, in file (decode) order.
        var videoTimestamps: [Int64]
        /// With several video streams (a streaming ladder's rungs): each one's presentation
        /// times in file order, by stream index (nil for other streams); absent otherwise.
        var renditionTimestamps: [[Int64]?]? = nil
        /// The video's per-frame quality against the pictures encoded, when the segment measured
        /// it (`--verify`, quality targets): what the stitch's checks and a job's report read.
        var quality: QualitySeries? = nil

        /// Presentation times of video stream `stream`'s packets in file order.
        func videoTimestamps(stream: Int) -> [Int64] {
            guard let all = renditionTimestamps else { return videoTimestamps }
            return all.indices.contains(stream) ? all[stream] ?? [] : []
        }
    }
}

extension FixedWidthInteger {
    /// Decodes a little-endian integer from exactly `MemoryLayout<Self>.size` bytes.
    init<C: Collection>(littleEndianBytes bytes: C) where C.Element == UInt8 {
        var value = Self.zero
        for (i, b) in bytes.enumerated() { value |= Self(truncatingIfNeeded: b) << (8 * i) }
        self = value
    }
}

