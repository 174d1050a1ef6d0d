internal import CFFmpeg
internal import CFFmpegShims

/// Helpers for calling FFmpeg: error text, the EAGAIN/EOF control-flow codes, and one-time setup.
enum FFmpeg {
    static let eagain = splice_AVERROR_EAGAIN()
    static let eof = splice_AVERROR_EOF()
    static let noPTS = splice_AV_NOPTS_VALUE()

    /// Routes FFmpeg's log through Splice's capture (quiet by default; `SPLICE_FFMPEG_LOG=info`
    /// or `debug` echoes FFmpeg's own messages to stderr). Idempotent.
    static let setUp: Void = {
        let level: Int32
        switch getenvString("SPLICE_FFMPEG_LOG") {
        case "debug": level = AV_LOG_DEBUG
        case "verbose": level = AV_LOG_VERBOSE
        case "info": level = AV_LOG_INFO
        case "warning": level = AV_LOG_WARNING
        case "error": level = AV_LOG_ERROR
        default: level = AV_LOG_QUIET
        }
        splice_av_log_install(level)
    }()

    /// FFmpeg's text for an error code, e.g. "Invalid data found when processing input".
    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return string(buffer)
    }

    /// Clears the calling thread's captured FFmpeg log line before a call we may need to explain.
    static func clearLastLog() {
        _ = setUp
        splice_av_log_clear_last_error()
    }

    /// The last error FFmpeg logged on this thread (often more specific than the return code).
    static func takeLastLog() -> String? {
        var buffer = [CChar](repeating: 0, count: 1024)
        splice_av_log_take_last_error(&buffer, buffer.count)
        let text = string(buffer)
        return text.isEmpty ? nil : text
    }

    /// "FFmpeg's text (detail from its log)" for a failed call.
    static func explain(_ code: Int32) -> String {
        let base = describe(code)
        if let detail = takeLastLog(), !detail.isEmpty, detail != base {
            return "\(base) (\(detail))"
        }
        return base
    }

    /// Builds a ``MediaError`` for a failed FFmpeg call.
    static func error(_ code: MediaError.Code, _ what: String, _ ret: Int32, hint: String? = nil) -> MediaError {
        var message = "\(what): \(explain(ret))"
        if let hint { message += "; \(hint)" }
        // I/O errors (EIO, ENOSPC, ETIMEDOUT, network) may succeed elsewhere or later.
        let retryable = ret == splice_AVERROR(EIO) || ret == splice_AVERROR(ETIMEDOUT)
            || ret == splice_AVERROR(ENOSPC) || ret == splice_AVERROR(ECONNRESET)
        return MediaError(code, message, ffmpegCode: ret, isRetryable: retryable)
    }

    static func getenvString(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    /// A NUL-terminated C character buffer as a Swift string.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A C string owned by FFmpeg, as a Swift string (nil for NULL).
    static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
