// The sched_getaffinity wrapper described in splice_cpu.h.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include "splice_cpu.h"

int splice_affinity_cpu_count(void) {
    // EINVAL means the mask is smaller than the kernel's CPU count: double it, as nproc does.
    for (int cpus = 1024; cpus <= (1 << 22); cpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(cpus);
        if (set == NULL) return -1;
        size_t size = CPU_ALLOC_SIZE(cpus);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        int error = errno;
        CPU_FREE(set);
        if (error != EINVAL) {
            errno = error;
            return -1;
        }
    }
    errno = EINVAL;
    return -1;
}
