/*
 * readloop: per-operation latency of file-system calls, timed inside one process so that
 * process start is not measured (bench/run.sh).
 *
 *   readloop MODE [-n N] [-r ROUNDS] [-w WARMUP] [-c LIMIT] [-b BYTES] [-t SECONDS] PATH|@LIST...
 *
 * MODE:
 *   read   open(O_RDONLY) + one read(2) of up to 4096 bytes + close, per operation
 *   stat   stat(2) of PATH, per operation
 *   ls     what `ls -l` does to a directory, per operation: opendir, readdir to the end and
 *          lstat (fstatat AT_SYMLINK_NOFOLLOW) of every entry but . and ..; -c LIMIT stops
 *          after LIMIT entries (to make the kernel learn exactly that many names)
 *
 * N operations per PATH (default 10000; for ls, default 3) are split into ROUNDS rounds
 * (default 5), and in each round every PATH gets its share in turn, so that all paths see the
 * same machine noise. WARMUP operations per PATH (default 200; for ls, 0) run first, untimed.
 * With -b, a read that does not return exactly BYTES bytes is an error. With -t, an ls stops
 * listing once SECONDS have passed since the start (for directories too slow to list fully:
 * the line then says complete=0 and how many entries were done in how long).
 *
 * A PATH of the form @FILE names a list of paths, one a line: each operation on it (warm-up
 * included) takes the next path of the list, wrapping around at its end. With a list of
 * distinct files at least WARMUP + N long, every timed operation is on a file not touched
 * before (random files of a large vault, for instance).
 *
 * Output, one line per PATH:
 *   path=P ops=N median_us=.. p90_us=.. mean_us=.. min_us=.. [entries=.. complete=0|1]
 * Exit status 1 when an operation failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum mode { MODE_READ, MODE_STAT, MODE_LS };

/* A PATH argument: one path, or (@FILE) a list used in turn. */
struct target {
    const char *name;  /* as given on the command line */
    char **list;
    size_t count, next;
};

static void load_list(struct target *t)
{
    FILE *f = fopen(t->name + 1, "r");
    if (f == NULL) {
        fprintf(stderr, "readloop: %s: %s\n", t->name + 1, strerror(errno));
        exit(1);
    }
    size_t cap = 0;
    char *line = NULL;
    size_t len = 0;
    ssize_t got;
    while ((got = getline(&line, &len, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = 0;
        if (got == 0)
            continue;
        if (t->count == cap) {
            cap = cap ? cap * 2 : 1024;
            t->list = realloc(t->list, cap * sizeof *t->list);
            if (t->list == NULL)
                exit(1);
        }
        t->list[t->count++] = strdup(line);
    }
    free(line);
    fclose(f);
    if (t->count == 0) {
        fprintf(stderr, "readloop: %s: no paths\n", t->name + 1);
        exit(1);
    }
}

/* The path of the next operation on t. */
static const char *next_path(struct target *t)
{
    if (t->list == NULL)
        return t->name;
    const char *p = t->list[t->next];
    t->next = (t->next + 1) % t->count;
    return p;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Percentile by nearest rank over sorted samples (p in 0..100); median of an even count averages. */
static double percentile(const double *s, size_t n, double p)
{
    if (n == 0)
        return 0;
    if (p == 50 && n % 2 == 0)
        return (s[n / 2 - 1] + s[n / 2]) / 2;
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return s[rank - 1];
}

static long expected_bytes = -1;
static long entry_limit = -1;
static double deadline_us = 0;  /* 0: none */
static int incomplete = 0;

/* One operation; returns 0 or an errno-style failure, and the number of entries for ls. */
static int one_op(enum mode m, const char *path, long *entries)
{
    switch (m) {
    case MODE_READ: {
        char buf[4096];
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            return errno;
        ssize_t n = read(fd, buf, sizeof buf);
        int err = n < 0 ? errno : 0;
        close(fd);
        if (err)
            return err;
        if (expected_bytes >= 0 && n != expected_bytes)
            return EIO;
        return 0;
    }
    case MODE_STAT: {
        struct stat st;
        return stat(path, &st) == 0 ? 0 : errno;
    }
    case MODE_LS: {
        DIR *d = opendir(path);
        if (d == NULL)
            return errno;
        int dfd = dirfd(d);
        long count = 0;
        int err = 0;
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (entry_limit >= 0 && count >= entry_limit)
                break;
            if (deadline_us > 0 && now_us() > deadline_us) {
                incomplete = 1;
                break;
            }
            struct stat st;
            if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                err = errno;
                break;
            }
            count++;
            errno = 0;
        }
        if (err == 0 && e == NULL && errno != 0)
            err = errno;
        closedir(d);
        *entries = count;
        return err;
    }
    }
    return EINVAL;
}

static void usage(void)
{
    fprintf(stderr, "usage: readloop read|stat|ls [-n N] [-r ROUNDS] [-w WARMUP] [-c LIMIT] [-b BYTES] [-t SECONDS] PATH|@LIST...\n");
    exit(2);
}

int main(int argc, char *argv[])
{
    if (argc < 3)
        usage();
    enum mode m;
    if (strcmp(argv[1], "read") == 0)
        m = MODE_READ;
    else if (strcmp(argv[1], "stat") == 0)
        m = MODE_STAT;
    else if (strcmp(argv[1], "ls") == 0)
        m = MODE_LS;
    else
        usage();

    long n = m == MODE_LS ? 3 : 10000, rounds = 5, warmup = m == MODE_LS ? 0 : 200;
    int opt;
    double budget = 0;
    optind = 2;
    while ((opt = getopt(argc, argv, "n:r:w:c:b:t:")) != -1) {
        switch (opt) {
        case 'n': n = atol(optarg); break;
        case 'r': rounds = atol(optarg); break;
        case 'w': warmup = atol(optarg); break;
        case 'c': entry_limit = atol(optarg); break;
        case 'b': expected_bytes = atol(optarg); break;
        case 't': budget = atof(optarg); break;
        default: usage();
        }
    }
    int npaths = argc - optind;
    if (npaths < 1 || n < 1 || rounds < 1 || warmup < 0)
        usage();
    if (rounds > n)
        rounds = n;
    struct target *paths = calloc((size_t)npaths, sizeof *paths);
    if (!paths)
        return 1;
    for (int p = 0; p < npaths; p++) {
        paths[p].name = argv[optind + p];
        if (paths[p].name[0] == '@')
            load_list(&paths[p]);
    }
    if (budget > 0)
        deadline_us = now_us() + budget * 1e6;

    double **samples = calloc((size_t)npaths, sizeof *samples);
    long *count = calloc((size_t)npaths, sizeof *count);
    long *entries = calloc((size_t)npaths, sizeof *entries);
    if (!samples || !count || !entries)
        return 1;
    for (int p = 0; p < npaths; p++) {
        samples[p] = malloc((size_t)n * sizeof **samples);
        if (!samples[p])
            return 1;
    }

    for (int p = 0; p < npaths; p++) {
        for (long i = 0; i < warmup; i++) {
            const char *path = next_path(&paths[p]);
            int err = one_op(m, path, &entries[p]);
            if (err) {
                fprintf(stderr, "readloop: %s %s: %s\n", argv[1], path, strerror(err));
                return 1;
            }
        }
    }
    for (long r = 0; r < rounds; r++) {
        long share = n / rounds + (r < n % rounds ? 1 : 0);
        for (int p = 0; p < npaths; p++) {
            for (long i = 0; i < share; i++) {
                const char *path = next_path(&paths[p]);
                double t0 = now_us();
                int err = one_op(m, path, &entries[p]);
                double t1 = now_us();
                if (err) {
                    fprintf(stderr, "readloop: %s %s: %s\n", argv[1], path, strerror(err));
                    return 1;
                }
                samples[p][count[p]++] = t1 - t0;
            }
        }
    }

    for (int p = 0; p < npaths; p++) {
        double *s = samples[p];
        long c = count[p];
        double sum = 0;
        for (long i = 0; i < c; i++)
            sum += s[i];
        qsort(s, (size_t)c, sizeof *s, cmp_double);
        printf("path=%s ops=%ld median_us=%.2f p90_us=%.2f mean_us=%.2f min_us=%.2f", paths[p].name, c,
               percentile(s, (size_t)c, 50), percentile(s, (size_t)c, 90), sum / (double)c, s[0]);
        if (m == MODE_LS)
            printf(" entries=%ld complete=%d", entries[p], !incomplete);
        printf("\n");
    }
    return 0;
}
