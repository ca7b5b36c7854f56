// Linux headers that Swift's Glibc module does not export (sys/epoll.h, eventfd, timerfd),
// re-exported here so the event loop can use them.
#pragma once
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/// errno of the calling thread (Swift sees errno, but this keeps call sites uniform in C shims).
static inline int sluice_errno(void) { extern int *__errno_location(void); return *__errno_location(); }
