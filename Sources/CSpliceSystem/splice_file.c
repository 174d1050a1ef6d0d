// The renameat2 wrapper described in splice_file.h.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include "splice_file.h"

int splice_rename_noreplace(const char *from, const char *to) {
    return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}
