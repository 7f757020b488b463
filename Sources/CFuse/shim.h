// The low-level API is used so that kernel entries can be invalidated on lock.
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/uio.h>
#include <fuse_lowlevel.h>

// FUSE_NOTIFY_INC_EPOCH (FUSE protocol 7.44, Linux 6.16): the kernel counts one epoch on, and
// every name it cached before is looked up again at its next use (fuse_dentry_revalidate), also
// under a directory some process has as its working directory. O(1): nothing is freed at once,
// so no FORGET storm. libfuse 3.14 has no call for it; a notification is a bare header with
// `unique` 0 and the code in `error`. Returns 0, or -errno (EINVAL from an older kernel).
static inline int kcfs_notify_increment_epoch(struct fuse_session *se) {
    struct { uint32_t len; int32_t error; uint64_t unique; } header = { sizeof(header), 8, 0 };
    ssize_t written = write(fuse_session_fd(se), &header, sizeof(header));
    return written == (ssize_t)sizeof(header) ? 0 : -errno;
}

// FUSE_NOTIFY_PRUNE (FUSE protocol 7.45, Linux 6.18): the kernel drops the names and inodes of
// the given node ids that nothing uses, and sends their FORGETs. libfuse 3.14 has no call for
// it: the header (code 9 in `error`), `struct fuse_notify_prune_out { u32 count; u32 padding;
// u64 spare; }`, then the ids. Returns 0, or -errno (EINVAL from an older kernel).
static inline int kcfs_notify_prune(struct fuse_session *se, const uint64_t *ids, uint32_t count) {
    struct { uint32_t len; int32_t error; uint64_t unique; uint32_t count; uint32_t padding; uint64_t spare; } head = {
        (uint32_t)(sizeof(head) + (size_t)count * sizeof(uint64_t)), 9, 0, count, 0, 0 };
    struct iovec iov[2] = { { &head, sizeof(head) }, { (void *)ids, (size_t)count * sizeof(uint64_t) } };
    ssize_t written = writev(fuse_session_fd(se), iov, 2);
    return written == (ssize_t)head.len ? 0 : -errno;
}
