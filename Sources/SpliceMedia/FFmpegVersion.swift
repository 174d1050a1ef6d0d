internal import CFFmpeg
internal import CSpliceShims

/// Versions of the linked FFmpeg libraries, for `splice --version` and bug reports.
public enum FFmpegLibraries {
    /// e.g. "libavformat 59.27.100, libavcodec 59.37.100".
    public static var versions: String {
        func v(_ n: UInt32) -> String { "\(n >> 16).\((n >> 8) & 0xff).\(n & 0xff)" }
        return "libavformat \(v(avformat_version())), libavcodec \(v(avcodec_version())), " +
            "libavutil \(v(avutil_version())), libswscale \(v(swscale_version())), " +
            "libswresample \(v(swresample_version()))"
    }
}
