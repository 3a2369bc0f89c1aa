// Linux interfaces that Swift's Glibc module does not expose: epoll, eventfd, timerfd, sendfile,
// openat2, sync_file_range, syncfs, O_TMPFILE, O_DIRECT, thread names, malloc_trim.
#ifndef TRANSFERD_CLINUX_SHIM_H
#define TRANSFERD_CLINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/sendfile.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <pthread.h>
#include <malloc.h>

// Declared only under _GNU_SOURCE, which Swift's Glibc module is not built with.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);
extern int sync_file_range(int fd, __off64_t offset, __off64_t nbytes, unsigned int flags);
extern int syncfs(int fd);

// sync_file_range(2) with SYNC_FILE_RANGE_WRITE (a _GNU_SOURCE constant): starts writeback of the
// dirty pages in the range without waiting for it, so a later fsync finds little left to write.
static inline int transferd_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, 2 /* SYNC_FILE_RANGE_WRITE */);
}
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/vfs.h>

// openat2(2) has no glibc wrapper in Debian 12: call it by number. RESOLVE_BENEATH refuses any
// resolution (.., absolute symlink, symlink target) that leaves the directory `dirfd` names.
static inline int transferd_openat2(int dirfd, const char *path, int flags, unsigned int mode, unsigned long long resolve) {
    struct open_how how = { .flags = (unsigned long long)flags, .mode = mode, .resolve = resolve };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

// O_TMPFILE (a _GNU_SOURCE macro; __O_TMPFILE is the same bits): open(2) makes an unnamed file in the directory, for linkat(2)
// to give it a name later.
static inline int transferd_open_unnamed(int dirfd, int flags, unsigned int mode) {
    return openat(dirfd, ".", flags | __O_TMPFILE, mode);
}

// linkat(2) of an open file itself (AT_EMPTY_PATH, a _GNU_SOURCE constant): the way to name an
// unnamed file where /proc is not mounted; it needs CAP_DAC_READ_SEARCH.
static inline int transferd_link_descriptor(int fd, int dirfd, const char *name) {
    return linkat(fd, "", dirfd, name, 0x1000 /* AT_EMPTY_PATH */);
}

// A second, O_DIRECT descriptor of an open file (O_DIRECT is a _GNU_SOURCE macro): reopened through
// /proc, so that it is an open file description of its own and the first descriptor stays buffered
// for everyone else reading or writing it. -1 where /proc is not mounted or the file system refuses
// O_DIRECT (EINVAL). __O_DIRECT: O_DIRECT without _GNU_SOURCE, as __O_TMPFILE above.
// transferd_filesystem_type: statfs(2)'s f_type of the file's file system (0 if unknown).
static inline long transferd_filesystem_type(int fd) {
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 ? (long)fs.f_type : 0;
}

static inline int transferd_open_direct(int fd) {
    char path[32];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return open(path, O_WRONLY | __O_DIRECT | O_CLOEXEC);
}
#endif
