/*
 * minfs: the baseline for keychainfs's read benchmark (bench/run.sh).
 *
 * A minimal libfuse 3 low-level filesystem that serves exactly one directory holding exactly
 * one file, /bench/secret, whose contents are a fixed 32-byte buffer. It does what keychainfs
 * does for a read and nothing more: name lookups with a 1.0 s entry and attribute timeout,
 * direct I/O on open (keychainfs's default, so every read reaches this process), and the same
 * multi-threaded request loop (at most 16 threads). No flush, no xattrs, no writes.
 *
 *   cc -O2 -o minfs bench/minfs.c $(pkg-config --cflags --libs fuse3)
 *   minfs MOUNTPOINT -o default_permissions [--pidfile FILE] [--flush] [--big N] [-s] [-f]
 *
 * Without -f it detaches once the mount is live (so a script can use the mount as soon as
 * the command returns), writing its pid to --pidfile when given. `fusermount3 -u MOUNTPOINT`
 * or SIGTERM ends it. -s serves requests on one thread. --flush answers FLUSH (a no-op), as
 * keychainfs does, instead of leaving it unimplemented (then the kernel stops sending it after
 * the first ENOSYS): to measure what the extra round trip on every close costs.
 *
 * --big N adds the floor of `ls -l` of a large service: a directory /big of N files
 * user0 .. user<N-1>, each holding the same 32 bytes as /bench/secret, listed with READDIRPLUS
 * (each name with its attributes, as keychainfs lists), and GETXATTR answered as keychainfs
 * answers it: ENODATA for a `user.` name, EOPNOTSUPP (no labels, no ACLs) for any other.
 * Reading random ones is the floor of keychainfs's read of random items: each a name the
 * kernel has to look up. A file system that serves some extended attributes must answer
 * GETXATTR (one that leaves it unimplemented is never asked again after the first ENOSYS,
 * which no xattr-serving file system can copy); GNU ls asks each file for its label and ACL
 * until one answer says the file system has none.
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { INO_ROOT = FUSE_ROOT_ID, INO_DIR = 2, INO_FILE = 3, INO_BIG = 4, INO_BIG_FIRST = 16 };

static const char dir_name[] = "bench";
static const char file_name[] = "secret";
static const char contents[32] = "0123456789abcdef0123456789ABCDEF";  /* exactly 32 bytes, no NUL */
static const double timeout = 1.0;
static time_t started;
static long big_files = -1;  /* --big N; -1: no /big */
static const char big_name[] = "big";

/* The inode of big/user<i>, or 0. */
static fuse_ino_t big_ino(const char *name)
{
    if (strncmp(name, "user", 4) != 0 || name[4] == '\0' || (name[4] == '0' && name[5] != '\0'))
        return 0;
    char *end;
    long i = strtol(name + 4, &end, 10);
    return *end == '\0' && i >= 0 && i < big_files ? INO_BIG_FIRST + (fuse_ino_t)i : 0;
}

static int fill_attr(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_atime = st->st_mtime = st->st_ctime = started;
    switch (ino) {
    case INO_ROOT:
    case INO_DIR:
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    case INO_FILE:
        st->st_mode = S_IFREG | 0400;  /* keychainfs's default access-group mode */
        st->st_nlink = 1;
        st->st_size = sizeof contents;
        st->st_blocks = 1;
        st->st_blksize = 4096;
        return 0;
    case INO_BIG:
        if (big_files < 0)
            return ENOENT;
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    default:
        if (ino < INO_BIG_FIRST || ino >= INO_BIG_FIRST + (fuse_ino_t)(big_files < 0 ? 0 : big_files))
            return ENOENT;
        st->st_mode = S_IFREG | 0400;
        st->st_nlink = 1;
        st->st_size = sizeof contents;
        st->st_blocks = 1;
        st->st_blksize = 4096;
        return 0;
    }
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    fuse_ino_t ino = 0;
    if (parent == INO_ROOT && strcmp(name, dir_name) == 0)
        ino = INO_DIR;
    else if (parent == INO_DIR && strcmp(name, file_name) == 0)
        ino = INO_FILE;
    else if (parent == INO_ROOT && big_files >= 0 && strcmp(name, big_name) == 0)
        ino = INO_BIG;
    else if (parent == INO_BIG)
        ino = big_ino(name);
    if (ino == 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.ino = ino;
    e.attr_timeout = timeout;
    e.entry_timeout = timeout;
    fill_attr(ino, &e.attr);
    fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    int err = fill_attr(ino, &st);
    if (err)
        fuse_reply_err(req, err);
    else
        fuse_reply_attr(req, &st, timeout);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    int big_file = big_files > 0 && ino >= INO_BIG_FIRST && ino < INO_BIG_FIRST + (fuse_ino_t)big_files;
    if (ino != INO_FILE && !big_file) {
        fuse_reply_err(req, ino == INO_ROOT || ino == INO_DIR || ino == INO_BIG ? EISDIR : ENOENT);
        return;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        fuse_reply_err(req, EACCES);
        return;
    }
    fi->direct_io = 1;  /* as keychainfs without -o kernel_cache: no page cache */
    fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    if (off < 0 || (size_t)off >= sizeof contents) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    size_t n = sizeof contents - (size_t)off;
    fuse_reply_buf(req, contents + off, n < size ? n : size);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino != INO_ROOT && ino != INO_DIR && !(ino == INO_BIG && big_files >= 0)) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    fuse_reply_open(req, fi);
}

/* The entries of /big from `off`: ".", "..", then user<i> at index i + 2; each entry's offset is
 * its index + 1. With `plus`, each with its attributes (READDIRPLUS). */
static void big_readdir(fuse_req_t req, size_t size, off_t off, int plus)
{
    char *buf = malloc(size);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t used = 0;
    for (off_t i = off; i < big_files + 2; i++) {
        char name[32];
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        if (i < 2) {
            strcpy(name, i == 0 ? "." : "..");
            e.ino = i == 0 ? INO_BIG : INO_ROOT;
            fill_attr(e.ino, &e.attr);
        } else {
            snprintf(name, sizeof name, "user%ld", (long)(i - 2));
            e.ino = INO_BIG_FIRST + (fuse_ino_t)(i - 2);
            fill_attr(e.ino, &e.attr);
            e.attr_timeout = timeout;
            e.entry_timeout = timeout;
        }
        /* The kernel takes no lookup of "." and "..": their entries carry inode 0 in a READDIRPLUS reply. */
        if (plus && i < 2)
            e.ino = 0;
        size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e, i + 1)
                           : fuse_add_direntry(req, buf + used, size - used, name, &e.attr, i + 1);
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

/* Entries: ".", "..", and the one child (the root also has /big with --big); each entry's
 * offset is its index + 1. With `plus`, in a READDIRPLUS reply's format. */
static void small_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
    const char *names[4] = {".", "..", ino == INO_ROOT ? dir_name : file_name, big_name};
    fuse_ino_t inos[4] = {ino, INO_ROOT, ino == INO_ROOT ? INO_DIR : INO_FILE, INO_BIG};
    off_t count = ino == INO_ROOT && big_files >= 0 ? 4 : 3;
    char buf[1024];
    size_t used = 0;
    if (size > sizeof buf)
        size = sizeof buf;
    for (off_t i = off; i < count; i++) {
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        e.attr.st_ino = inos[i];
        e.attr.st_mode = inos[i] == INO_FILE ? S_IFREG : S_IFDIR;
        /* READDIRPLUS: inode 0 makes the kernel take the name without a lookup count. */
        size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, names[i], &e, i + 1)
                           : fuse_add_direntry(req, buf + used, size - used, names[i], &e.attr, i + 1);
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == INO_BIG)
        big_readdir(req, size, off, 0);
    else
        small_readdir(req, ino, size, off, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == INO_BIG)
        big_readdir(req, size, off, 1);
    else
        small_readdir(req, ino, size, off, 1);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    (void)ino;
    (void)size;
    fuse_reply_err(req, strncmp(name, "user.", 5) == 0 ? ENODATA : EOPNOTSUPP);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static struct fuse_lowlevel_ops ops = {
    .lookup = op_lookup,
    .getattr = op_getattr,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
};

int main(int argc, char *argv[])
{
    /* Take --pidfile and --flush out before libfuse sees the arguments. */
    const char *pidfile = NULL;
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pidfile") == 0 && i + 1 < argc)
            pidfile = argv[++i];
        else if (strcmp(argv[i], "--flush") == 0)
            ops.flush = op_flush;
        else if (strcmp(argv[i], "--big") == 0 && i + 1 < argc) {
            big_files = atol(argv[++i]);
            ops.readdirplus = op_readdirplus;
            ops.getxattr = op_getxattr;
        }
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    argv[argc] = NULL;

    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    if (fuse_parse_cmdline(&args, &opts) != 0)
        return 1;
    if (opts.show_help || opts.show_version || opts.mountpoint == NULL) {
        fprintf(stderr, "usage: %s MOUNTPOINT [-o default_permissions] [--pidfile FILE] [--flush] [--big N] [-s] [-f]\n", argv[0]);
        return opts.mountpoint == NULL ? 1 : 0;
    }
    started = time(NULL);

    int status = 1;
    struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
    if (se == NULL)
        goto out_args;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_session;
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto out_signals;
    /* The mount is live: detach now, so the caller can use it as soon as we return. */
    if (fuse_daemonize(opts.foreground) != 0)
        goto out_unmount;
    if (pidfile) {
        FILE *f = fopen(pidfile, "w");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    if (opts.singlethread) {
        status = fuse_session_loop(se);
    } else {
        struct fuse_loop_config *config = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(config, 16);  /* as keychainfs's mount loop */
        fuse_loop_cfg_set_clone_fd(config, opts.clone_fd);
        status = fuse_session_loop_mt(se, config);
        fuse_loop_cfg_destroy(config);
    }
    status = status == 0 ? 0 : 1;
out_unmount:
    fuse_session_unmount(se);
out_signals:
    fuse_remove_signal_handlers(se);
out_session:
    fuse_session_destroy(se);
out_args:
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    if (pidfile && status == 0)
        unlink(pidfile);
    return status;
}
