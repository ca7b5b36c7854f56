// Shutdown and reload signals as loop events: sigset macros cannot be imported into Swift.
#pragma once
#include <sys/signalfd.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

/// Blocks SIGINT/SIGTERM/SIGHUP in the calling thread (call before starting threads) and returns a
/// signalfd that reports them, so shutdown is an ordinary loop event. sigset macros are not importable.
static inline int sluice_signalfd_for_shutdown(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}
static inline uint32_t sluice_signalfd_read_signo(int fd) {
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof si);
    return n == (ssize_t)sizeof si ? si.ssi_signo : 0;
}

