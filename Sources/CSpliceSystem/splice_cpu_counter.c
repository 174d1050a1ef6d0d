// The perf_event_open wrapper described in splice_cpu_counter.h.
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "splice_cpu_counter.h"

int splice_cpu_counter_open(void) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.inherit = 1;
    // Under perf_event_paranoid 2 an unprivileged process may count its own user-space time only.
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int64_t splice_cpu_counter_read(int fd) {
    uint64_t value = 0;
    if (read(fd, &value, sizeof value) != (ssize_t)sizeof value) return -1;
    return (int64_t)value;
}
