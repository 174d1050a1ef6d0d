// CFFmpegShims: the FFmpeg macros Swift cannot import (function-like macros, FFERRTAG tags, cast
// expressions) and the av_log capture, which needs a variadic callback. Depends on CFFmpeg only.
// Every symbol is prefixed `splice_` and carries a comment saying why it exists.
#ifndef SPLICE_CFFMPEGSHIMS_H
#define SPLICE_CFFMPEGSHIMS_H
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>

/// AVERROR(e) is a function-like macro.
static inline int splice_AVERROR(int e) { return AVERROR(e); }
/// AVERROR(EAGAIN): "feed more input / drain output first" — control flow, not an error.
static inline int splice_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }
/// The FFERRTAG-based error codes are built from a macro Swift cannot evaluate.
static inline int splice_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int splice_AVERROR_INVALIDDATA(void) { return AVERROR_INVALIDDATA; }
/// AV_NOPTS_VALUE is a cast expression Swift does not import.
static inline int64_t splice_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }

/// Installs Splice's av_log callback (once, idempotent). FFmpeg reports the useful detail of a
/// failure ("moov atom not found") only through av_log, which is variadic and so not callable
/// from Swift; the callback keeps the last error-level line of the calling thread so Swift errors
/// can quote it, and echoes messages to stderr only at or above `echo_level` (AV_LOG_QUIET = none).
void splice_av_log_install(int echo_level);
/// Copies the calling thread's last captured FFmpeg error line into `buffer` (NUL-terminated;
/// empty when there is none) and clears it.
void splice_av_log_take_last_error(char *buffer, size_t size);
/// Clears the calling thread's captured error line, before a call whose failure we want to explain.
void splice_av_log_clear_last_error(void);
#endif
