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
#endif
