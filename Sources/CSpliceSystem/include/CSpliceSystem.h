// CSpliceSystem: the Linux calls Swift's Glibc module does not show, tied to no library — glibc
// declares them only under _GNU_SOURCE (posix_spawn's closefrom and chdir actions, renameat2,
// accept4, sched_getaffinity), they live in a header it leaves out (mallopt), they are variadic (prctl) or raw
// syscalls (perf_event_open: a segment's CPU counted over the threads it starts). Used by SpliceStore (spawning
// PostgreSQL's tools), SpliceMedia (publishing outputs), SpliceHTTP (accepting connections), SpliceCluster (a worker's
// usable cores) and `splice` (media-task children). Every symbol is prefixed `splice_` and
// carries a comment saying why it exists.
#ifndef SPLICE_CSPLICESYSTEM_H
#define SPLICE_CSPLICESYSTEM_H
#include "splice_process.h"
#include "splice_file.h"
#include "splice_socket.h"
#include "splice_cpu.h"
#include "splice_memory.h"
#include "splice_thread.h"
#include "splice_cpu_counter.h"
#endif
