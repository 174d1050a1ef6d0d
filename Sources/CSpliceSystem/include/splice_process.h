// Process-spawning helpers. glibc declares posix_spawn's "closefrom" and "chdir" file actions only
// under _GNU_SOURCE, which Swift's Glibc module is not built with; these wrappers expose them.
#ifndef SPLICE_PROCESS_H
#define SPLICE_PROCESS_H
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np: close every descriptor >= `from` in the child, so a
/// daemon it leaves behind (pg_ctl's server) holds none of ours.
int splice_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from);
/// posix_spawn_file_actions_addchdir_np: start the child in `directory`.
int splice_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *directory);
/// prctl(PR_SET_PDEATHSIG, SIGKILL) (variadic, so not callable from Swift): this process is killed
/// when its parent dies (a coordinator's media-task child); exits at once if the parent is already gone.
void splice_die_with_parent(void);
#endif
