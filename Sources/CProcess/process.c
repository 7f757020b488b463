#define _GNU_SOURCE
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stddef.h>
#include <spawn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "kcfs_process.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int kcfs_harden_process(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int kcfs_accept_cloexec(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

int kcfs_release_free_heap(void) {
    return malloc_trim(0);
}

int kcfs_fix_heap_thresholds(int trim_bytes, int mmap_bytes) {
    if (mallopt(M_TRIM_THRESHOLD, trim_bytes) != 1) return -1;
    return mallopt(M_MMAP_THRESHOLD, mmap_bytes) == 1 ? 0 : -1;
}

int kcfs_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

int kcfs_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int kcfs_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int kcfs_spawn_setsid_flag(void) { return POSIX_SPAWN_SETSID; }

int kcfs_peer_groups(int fd, gid_t *groups, int capacity) {
    socklen_t len = (socklen_t)(capacity * (int)sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) {
        if (errno != ERANGE) return -1;
    }
    return (int)(len / sizeof(gid_t));
}

int kcfs_peer_pidfd(int fd) {
    int pidfd = -1;
    socklen_t len = sizeof(pidfd);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0) return -1;
    return pidfd;
}

int kcfs_pidfd_alive(int pidfd) {
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0) return 1;
    return errno == ESRCH ? 0 : -1;
}

int kcfs_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int kcfs_accept_nonblocking(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

void kcfs_name_thread(const char *name) {
    char shortened[16];
    int i = 0;
    for (; name[i] != 0 && i < 15; i++) shortened[i] = name[i];
    shortened[i] = 0;
    pthread_setname_np(pthread_self(), shortened);
}
