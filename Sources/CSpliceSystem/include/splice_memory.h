// The allocator's tuning. mallopt and its M_* parameters live in <malloc.h>, which Swift's Glibc
// module does not include; `splice` calls this once at start (Sources/splice/main.swift says why).
#ifndef SPLICE_MEMORY_H
#define SPLICE_MEMORY_H

/// Serves blocks up to `mmap_threshold` bytes from the heap rather than fresh mappings, and keeps
/// up to `trim_threshold` bytes of free memory at a heap's top instead of returning it to the
/// kernel (mallopt M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). 0 when glibc took both, -1 otherwise.
int splice_keep_freed_memory(int mmap_threshold, int trim_threshold);
#endif
