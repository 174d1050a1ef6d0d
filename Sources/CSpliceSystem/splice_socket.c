// The accept4 wrapper described in splice_socket.h.
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/socket.h>
#include "splice_socket.h"

int splice_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
