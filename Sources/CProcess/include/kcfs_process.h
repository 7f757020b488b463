#ifndef KCFS_PROCESS_H
#define KCFS_PROCESS_H

/// Marks the process non-dumpable (no core dumps, no ptrace by the same user) and sets
/// RLIMIT_CORE to 0. Returns 0 on success, -1 with errno set.
int kcfs_harden_process(void);

/// accept4(2) with SOCK_CLOEXEC.
int kcfs_accept_cloexec(int listener);

/// 1 when the process is dumpable, 0 when not, -1 on error (prctl PR_GET_DUMPABLE).
int kcfs_is_dumpable(void);

#endif
