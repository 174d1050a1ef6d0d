public import SpliceCore

/// Why a media operation failed: a stable ``code`` to branch on, the raw FFmpeg error code when
/// there is one, and a one-line message for people that names the file and what to do next.
public struct MediaError: SpliceError, Hashable {
    /// Stable categories, kebab-case as text; the coordinator's retry policy and the CLI's exit
    /// path read these.
    public enum Code: String, Sendable, Codable, Hashable {
        /// The input does not exist or cannot be opened.
        case fileNotFound = "file-not-found"
        /// The input exists but is not media FFmpeg can read (truncated, corrupt, random bytes).
        case invalidMedia = "invalid-media"
        /// The input has no track of a kind the operation needs.
        case noUsableTrack = "no-usable-track"
        /// No decoder or encoder for a codec, or a codec the container cannot hold.
        case unsupportedCodec = "unsupported-codec"
        /// The requested settings are not valid (see the message for the field).
        case invalidSettings = "invalid-settings"
        /// Decoding failed mid-stream.
        case decodeFailed = "decode-failed"
        /// Encoding failed.
        case encodeFailed = "encode-failed"
        /// Writing the output failed (disk full, permissions, muxer refusal), or its folder is
        /// missing or not writable.
        case writeFailed = "write-failed"
        /// A file already exists where the output goes and replacing it was not allowed (or one
        /// appeared while the output was being written); it was left as it was.
        case outputExists = "output-exists"
        /// Segments handed to the stitcher do not belong together.
        case incompatibleSegments = "incompatible-segments"
        /// A verified output failed its quality thresholds (`--verify`); it was removed and the
        /// report kept.
        case qualityBelowThreshold = "quality-below-threshold"
        /// The operation was cancelled; any partial output was removed.
        case cancelled
        /// An internal invariant did not hold.
        case internalError = "internal-error"
    }

    /// The category.
    public var code: Code
    /// The FFmpeg (negative AVERROR) code, when FFmpeg reported the failure, or AVERROR(errno) of
    /// a system call that failed (so ENOSPC reads the same from a muxer and from a segment file).
    public var ffmpegCode: Int32?
    /// One line for people: what failed, on which file, and what to do next.
    public var message: String
    /// Whether trying the same work again (possibly elsewhere) can help: true for I/O trouble,
    /// false for deterministic failures such as undecodable input or invalid settings.
    public var isRetryable: Bool

    /// Creates an error.
    public init(_ code: Code, _ message: String, ffmpegCode: Int32? = nil, isRetryable: Bool = false) {
        self.code = code
        self.message = message
        self.ffmpegCode = ffmpegCode
        self.isRetryable = isRetryable
    }

    public var description: String { message }

    /// The error a cancelled operation reports.
    public static func cancelled(_ what: String) -> MediaError {
        MediaError(.cancelled, "\(what) was cancelled; partial output was removed")
    }
}
