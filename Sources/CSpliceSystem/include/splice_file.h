// File helpers. glibc declares renameat2 and RENAME_NOREPLACE only under _GNU_SOURCE, which Swift's
// Glibc module is not built with; this wrapper exposes the one use Splice has for them.
#ifndef SPLICE_FILE_H
#define SPLICE_FILE_H

/// rename(2) that never replaces: renameat2(from, to, RENAME_NOREPLACE). Returns 0, or -1 with errno
/// set — EEXIST when `to` exists, EINVAL (or ENOSYS) when the file system cannot do it atomically.
int splice_rename_noreplace(const char *from, const char *to);
#endif
