#ifndef KCFS_PROCESS_H
#define KCFS_PROCESS_H

/// Marks the process non-dumpable (no core dumps, no ptrace by the same user) and sets
/// RLIMIT_CORE to 0. Returns 0 on success, -1 with errno set.
int kcfs_harden_process(void);

/// accept4(2) with SOCK_CLOEXEC.
int kcfs_accept_cloexec(int listener);

/// pipe2(2) with O_CLOEXEC (declared only under _GNU_SOURCE): ends[0] reads, ends[1] writes.
/// Returns 0, or -1 with errno set.
int kcfs_pipe_cloexec(int ends[2]);

/// Gives the heap's free pages back to the system (malloc_trim(3)); 1 when some were released.
int kcfs_release_free_heap(void);

/// Fixes malloc's trim and mmap thresholds (mallopt(3) M_TRIM_THRESHOLD, M_MMAP_THRESHOLD),
/// which also stops glibc raising them as large blocks are freed. 0, or -1 when one was refused.
int kcfs_fix_heap_thresholds(int trim_bytes, int mmap_bytes);

/// 1 when the process is dumpable, 0 when not, -1 on error (prctl PR_GET_DUMPABLE).
int kcfs_is_dumpable(void);

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+): close every descriptor >= from in
/// the child, so a spawned daemon holds none of its starter's pipes.
int kcfs_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from);

/// posix_spawn_file_actions_addchdir_np: the child starts in `path`.
int kcfs_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// POSIX_SPAWN_SETSID, which the headers declare only under _GNU_SOURCE.
int kcfs_spawn_setsid_flag(void);

#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/eventfd.h>

/// pthread_setname_np for the calling thread (names show in `top -H` and /proc/PID/task).
void kcfs_name_thread(const char *name);

/// The supplementary groups of a connected Unix socket's peer as the kernel recorded them at
/// connect time (SO_PEERGROUPS). Returns the number of groups (which may exceed `capacity`:
/// call again with more room), or -1 with errno set.
int kcfs_peer_groups(int fd, gid_t *groups, int capacity);

/// A pidfd for the process that connected a Unix socket (SO_PEERPIDFD, Linux 6.5), opened with
/// close-on-exec. Returns the descriptor, or -1 with errno set.
int kcfs_peer_pidfd(int fd);

/// 1 while the process behind a pidfd has not been reaped, 0 once it has, -1 on error:
/// a pid read while this says 1 still names that process.
int kcfs_pidfd_alive(int pidfd);

/// Makes a descriptor non-blocking. Returns 0, or -1 with errno set.
int kcfs_set_nonblocking(int fd);

/// accept4(2) with SOCK_CLOEXEC | SOCK_NONBLOCK.
int kcfs_accept_nonblocking(int listener);
#include <stddef.h>

/// sendmsg(2) of `len` bytes with one descriptor attached (SCM_RIGHTS); `fd` < 0 sends none.
/// Returns the bytes sent, or -1 with errno set (EINTR is retried).
long kcfs_send_with_fd(int sock, const void *buf, size_t len, int fd);

/// recvmsg(2) into `buf` with room for one passed descriptor, received close-on-exec. A
/// descriptor that came is stored in `*fd` (else -1 is stored). Further ones never reach this
/// process: the kernel drops them and `*truncated` is set (MSG_CTRUNC).
/// Returns the bytes read, or -1 with errno set.
long kcfs_recv_with_fd(int sock, void *buf, size_t len, int flags, int *fd, int *truncated);

/// recvmsg(2) into `buf` with no room for descriptors: any that came with the bytes are
/// dropped by the kernel, never entering this process (so no close here can wait on their
/// file system), and `*refused` is set. Returns the bytes read, or -1 with errno set.
long kcfs_recv_refusing_fds(int sock, void *buf, size_t len, int flags, int *refused);

/// SO_PASSRIGHTS (Linux 6.16): whether peers may send descriptors to this socket at all; a
/// refused sender's sendmsg fails with EPERM. An accepted socket takes its listener's setting.
/// Returns 0, or -1 with errno set (ENOPROTOOPT on older kernels).
#define KCFS_SO_PASSRIGHTS 83
int kcfs_set_pass_rights(int sock, int allowed);

/// 1 when `fd` is the FUSE device (character device 10,229, /dev/fuse), 0 when it is
/// something else, -1 with errno set when statx fails. Never waits for a file system.
int kcfs_is_fuse_device(int fd);
/// A new pseudo-terminal pair (posix_openpt, grantpt, unlockpt, ptsname_r), both ends
/// close-on-exec and neither the controlling terminal. Returns the controller and stores the
/// terminal end in `*terminal`, or returns -1 with errno set.
int kcfs_open_pty(int *terminal);

#endif
