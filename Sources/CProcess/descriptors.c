#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include "kcfs_process.h"

long kcfs_send_with_fd(int sock, const void *buf, size_t len, int fd) {
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    union { struct cmsghdr align; char bytes[CMSG_SPACE(sizeof(int))]; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    long n;
    do { n = sendmsg(sock, &msg, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n;
}

long kcfs_recv_with_fd(int sock, void *buf, size_t len, int flags, int *fd, int *truncated) {
    *fd = -1;
    *truncated = 0;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    // Room for one descriptor: the kernel drops the ones that do not fit (MSG_CTRUNC) without
    // ever putting them in this process's table, so nothing here closes them.
    union { struct cmsghdr align; char bytes[CMSG_SPACE(sizeof(int))]; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.bytes, .msg_controllen = sizeof control.bytes };
    long n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    if (n < 0) return n;
    *truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        if (c->cmsg_len >= CMSG_LEN(sizeof(int)) && *fd < 0) memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    return n;
}

long kcfs_recv_refusing_fds(int sock, void *buf, size_t len, int flags, int *refused) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    long n = recvmsg(sock, &msg, flags);
    *refused = n >= 0 && (msg.msg_flags & MSG_CTRUNC) != 0;
    return n;
}

int kcfs_set_pass_rights(int sock, int allowed) {
    return setsockopt(sock, SOL_SOCKET, KCFS_SO_PASSRIGHTS, &allowed, sizeof allowed);
}

int kcfs_is_fuse_device(int fd) {
    // statx, not fstat, and from the cache only: a FUSE file's attributes would be asked of its
    // file system, which may never answer.
    struct statx st;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &st) != 0) return -1;
    return S_ISCHR(st.stx_mode) && st.stx_rdev_major == 10 && st.stx_rdev_minor == 229;
}

int kcfs_pipe_cloexec(int ends[2]) {
    return pipe2(ends, O_CLOEXEC);
}
