// Linux interfaces that Swift's Glibc module does not expose: epoll, eventfd, timerfd, sendfile.
#ifndef TRANSFERD_CLINUX_SHIM_H
#define TRANSFERD_CLINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/sendfile.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/socket.h>

// accept4 is declared only under _GNU_SOURCE, which Swift's Glibc module is not built with.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

// openat2(2) has no glibc wrapper in Debian 12: call it by number. RESOLVE_BENEATH refuses any
// resolution (.., absolute symlink, symlink target) that leaves the directory `dirfd` names.
static inline int transferd_openat2(int dirfd, const char *path, int flags, unsigned int mode, unsigned long long resolve) {
    struct open_how how = { .flags = (unsigned long long)flags, .mode = mode, .resolve = resolve };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}
#endif
