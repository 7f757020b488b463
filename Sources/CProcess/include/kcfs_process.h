#ifndef KCFS_PROCESS_H
#define KCFS_PROCESS_H

/// Marks the process non-dumpable (no core dumps, no ptrace by the same user) and sets
/// RLIMIT_CORE to 0. Returns 0 on success, -1 with errno set.
int kcfs_harden_process(void);

/// accept4(2) with SOCK_CLOEXEC.
int kcfs_accept_cloexec(int listener);

/// 1 when the process is dumpable, 0 when not, -1 on error (prctl PR_GET_DUMPABLE).
int kcfs_is_dumpable(void);

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+): close every descriptor >= from in
/// the child, so a spawned daemon holds none of its starter's pipes.
int kcfs_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from);

/// posix_spawn_file_actions_addchdir_np: the child starts in `path`.
int kcfs_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path);
#endif
