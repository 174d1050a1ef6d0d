/// The containers an export can write.
public enum OutputFileType: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
    case mp4, mov, mkv, webm

    /// The type a file name implies (`.mp4`/`.m4v`, `.mov`/`.qt`, `.mkv`, `.webm`), or nil.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt": self = .mov
        case "mkv": self = .mkv
        case "webm": self = .webm
        default: return nil
        }
    }

    /// FFmpeg's muxer name.
    var muxerName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .webm: "webm"
        }
    }

    /// Whether the container is QuickTime-family (edit lists, `moov` atom, faststart).
    var isQuickTime: Bool { self == .mp4 || self == .mov }

    public var description: String { rawValue }
}
