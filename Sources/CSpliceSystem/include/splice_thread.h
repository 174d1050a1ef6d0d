// Thread names. glibc declares pthread_setname_np only under _GNU_SOURCE, which Swift's Glibc
// module is not built with; Foundation's Thread.name does not reach the kernel on Linux.
#ifndef SPLICE_THREAD_H
#define SPLICE_THREAD_H

/// Names the calling thread as `ps -L`, `top -H` and /proc/self/task/*/comm show it (cut to the
/// kernel's 15 bytes); 0 on success, an errno value otherwise.
int splice_name_this_thread(const char *name);
#endif
