// The posix_spawn wrappers described in splice_process.h.
#define _GNU_SOURCE
#include "splice_process.h"
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

int splice_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int splice_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *directory) {
    return posix_spawn_file_actions_addchdir_np(actions, directory);
}

void splice_die_with_parent(void) {
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have gone before the request took effect: then nobody waits for us.
    if (getppid() != parent) _exit(1);
}
