/// What encoding one segment's video produced, so a starved segment shows: the bytes of its video
/// packets (warm-up frames dropped), their bit rate over the segment's span, and the encoder's
/// mean frame QP when it reports one (x264, x265, libvpx). One form from the encoder to the user:
/// `splice transcode --json` prints it for each segment, a worker's COMPLETE carries it, the store
/// keeps it with the segment (`video_bytes`, `video_bits_per_second`, `mean_qp`) and
/// `splice status` shows it. A segment without video has none.
public struct SegmentFigures: Sendable, Codable, Hashable {
    /// Bytes of the segment's video packets.
    public var videoBytes: Int64
    /// Their bit rate over the segment's span (bits per second), when the span is known.
    public var videoBitsPerSecond: Int64?
    /// The encoder's mean frame QP, to two decimals, when the encoder reports one.
    public var meanQP: Double?

    public init(videoBytes: Int64, videoBitsPerSecond: Int64? = nil, meanQP: Double? = nil) {
        self.videoBytes = videoBytes
        self.videoBitsPerSecond = videoBitsPerSecond
        self.meanQP = meanQP
    }
}
