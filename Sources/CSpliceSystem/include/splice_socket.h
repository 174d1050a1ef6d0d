// Socket helpers. glibc declares accept4 only under _GNU_SOURCE, which Swift's Glibc module is not
// built with; accept + fcntl instead would leave a moment in which a child spawned by another
// thread (a media task) inherits the connection.
#ifndef SPLICE_SOCKET_H
#define SPLICE_SOCKET_H

/// accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC): the connection's descriptor, or -1 with errno set.
int splice_accept_nonblocking(int fd);
#endif
