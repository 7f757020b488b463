// The low-level API is used so that kernel entries can be invalidated on lock.
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
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
