// The av_log capture described in CFFmpegShims.h.
#include "CFFmpegShims.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <libavutil/log.h>

static _Thread_local char splice_last_error[1024];
static int splice_echo_level = AV_LOG_QUIET;
static pthread_once_t splice_log_once = PTHREAD_ONCE_INIT;

static void splice_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    if (level > AV_LOG_ERROR && level > splice_echo_level) {
        return;
    }
    char line[1024];
    int print_prefix = 0; // no "[mov,mp4 @ 0x…]" prefix: messages are quoted to people
    va_list copy;
    va_copy(copy, vl);
    av_log_format_line2(avcl, level, fmt, copy, line, sizeof line, &print_prefix);
    va_end(copy);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) {
        line[--n] = '\0';
    }
    if (level <= AV_LOG_ERROR && n > 0) {
        memcpy(splice_last_error, line, n + 1);
    }
    if (level <= splice_echo_level) {
        fprintf(stderr, "ffmpeg: %s\n", line);
    }
}

static void splice_log_setup(void) {
    av_log_set_callback(splice_log_callback);
}

void splice_av_log_install(int echo_level) {
    splice_echo_level = echo_level;
    av_log_set_level(echo_level > AV_LOG_ERROR ? echo_level : AV_LOG_ERROR);
    pthread_once(&splice_log_once, splice_log_setup);
}

void splice_av_log_take_last_error(char *buffer, size_t size) {
    if (size == 0) {
        return;
    }
    size_t n = strnlen(splice_last_error, sizeof splice_last_error);
    if (n >= size) {
        n = size - 1;
    }
    memcpy(buffer, splice_last_error, n);
    buffer[n] = '\0';
    splice_last_error[0] = '\0';
}

void splice_av_log_clear_last_error(void) {
    splice_last_error[0] = '\0';
}
