// The pthread_setname_np wrapper described in splice_thread.h.
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include "splice_thread.h"

int splice_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = '\0';
    return pthread_setname_np(pthread_self(), cut);
}
