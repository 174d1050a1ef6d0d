// A CPU-time counter for a thread and every thread it starts afterwards. perf_event_open has no
// glibc wrapper (it is a raw syscall) and its attribute structure and constants come from
// <linux/perf_event.h>; a segment's export counts with it the codecs' own worker threads (x264's,
// libavcodec's), which a thread's CPU clock leaves out.
#ifndef SPLICE_CPU_COUNTER_H
#define SPLICE_CPU_COUNTER_H
#include <stdint.h>

/// Opens a software task-clock counter on the calling thread, inherited by the threads it (and
/// they) start from now on: their time is added to it, also once they have exited. A descriptor,
/// or -1 with errno set where the kernel refuses (perf_event_paranoid 3, a seccomp profile that
/// blocks perf_event_open, as container runtimes' defaults do).
int splice_cpu_counter_open(void);
/// The nanoseconds counted so far, or -1 with errno set.
int64_t splice_cpu_counter_read(int fd);
#endif
