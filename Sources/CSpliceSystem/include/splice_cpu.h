// CPU affinity. glibc declares sched_getaffinity and the CPU_ALLOC/CPU_COUNT_S macros only under
// _GNU_SOURCE, which Swift's Glibc module is not built with (and macros do not import anyway);
// this wrapper counts the CPUs a worker may run on.
#ifndef SPLICE_CPU_H
#define SPLICE_CPU_H

/// The number of CPUs in this thread's affinity mask (sched_getaffinity(0, …): `taskset`, a
/// cpuset, Kubernetes' static CPU manager), with a mask grown until it holds every CPU the kernel
/// knows; -1 with errno set when the kernel refuses.
int splice_affinity_cpu_count(void);
#endif
