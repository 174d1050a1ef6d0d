#include "splice_memory.h"
#include <malloc.h>

int splice_keep_freed_memory(int mmap_threshold, int trim_threshold) {
    // mallopt returns 1 on success and 0 on error.
    int mapped = mallopt(M_MMAP_THRESHOLD, mmap_threshold);
    int trimmed = mallopt(M_TRIM_THRESHOLD, trim_threshold);
    return mapped == 1 && trimmed == 1 ? 0 : -1;
}
