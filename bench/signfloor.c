/*
 * signfloor: the least a daemon does for one SecKey signature with a key it already holds.
 *
 *   signfloor server PATH              answer on a Unix stream socket, thread per connection
 *   signfloor client PATH SECONDS      one client signing a 32-byte digest in a loop
 *   signfloor inproc SECONDS           the same signatures without the socket
 *
 * Each request is a 32-byte digest in a 96-byte frame; the server signs it with one P-256 key made
 * at start (EVP_PKEY held for the run, as keychainfs keeps an opened key) and answers with the DER
 * signature in a 160-byte frame. Prints `RATE signatures/s`. Blocking I/O, no parsing, no checks
 * of the caller: a floor, not a design.
 *
 *   cc -O2 -pthread bench/signfloor.c -o signfloor -lcrypto
 */
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { REQ = 96, REP = 160, DIGEST = 32 };

static EVP_PKEY *key;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Reads (rd) or writes exactly n bytes; -1 when the peer is gone. */
static int full(int fd, unsigned char *b, size_t n, int rd)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = rd ? read(fd, b + done, n - done) : write(fd, b + done, n - done);
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Signs the digest at `in` into `out` (DER, at most REP - 1 bytes after a length byte). */
static int sign(EVP_PKEY_CTX *ctx, const unsigned char *in, unsigned char *out)
{
    size_t len = REP - 1;
    if (EVP_PKEY_sign(ctx, out + 1, &len, in, DIGEST) != 1)
        return -1;
    out[0] = (unsigned char)len;
    return 0;
}

static EVP_PKEY_CTX *signer(void)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    if (ctx == NULL || EVP_PKEY_sign_init(ctx) != 1) {
        fprintf(stderr, "signfloor: no signing context\n");
        exit(1);
    }
    return ctx;
}

static void *serve(void *arg)
{
    int fd = (int)(long)arg;
    unsigned char req[REQ], rep[REP];
    memset(rep, 0, sizeof rep);
    EVP_PKEY_CTX *ctx = signer();
    while (full(fd, req, REQ, 1) == 0) {
        if (sign(ctx, req, rep) != 0 || full(fd, rep, REP, 0) != 0)
            break;
    }
    EVP_PKEY_CTX_free(ctx);
    close(fd);
    return NULL;
}

static int server(const char *path)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof u.sun_path)
        return fprintf(stderr, "signfloor: path too long\n"), 2;
    strcpy(u.sun_path, path);
    unlink(path);
    if (bind(s, (struct sockaddr *)&u, sizeof u) != 0 || listen(s, 16) != 0)
        return perror("signfloor: bind"), 1;
    for (;;) {
        int fd = accept(s, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        pthread_create(&t, NULL, serve, (void *)(long)fd);
        pthread_detach(t);
    }
}

static int client(const char *path, double seconds)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof u.sun_path)
        return fprintf(stderr, "signfloor: path too long\n"), 2;
    strcpy(u.sun_path, path);
    if (connect(fd, (struct sockaddr *)&u, sizeof u) != 0)
        return perror("signfloor: connect"), 1;
    unsigned char req[REQ], rep[REP];
    for (int i = 0; i < REQ; i++)
        req[i] = (unsigned char)i;
    long n = 0;
    double end = now() + seconds;
    while (now() < end) {
        if (full(fd, req, REQ, 0) != 0 || full(fd, rep, REP, 1) != 0 || rep[0] == 0)
            return fprintf(stderr, "signfloor: the server stopped answering\n"), 1;
        n++;
    }
    printf("%.0f signatures/s\n", n / seconds);
    return 0;
}

static int inproc(double seconds)
{
    EVP_PKEY_CTX *ctx = signer();
    unsigned char digest[DIGEST], sig[REP];
    for (int i = 0; i < DIGEST; i++)
        digest[i] = (unsigned char)i;
    long n = 0;
    double end = now() + seconds;
    while (now() < end) {
        if (sign(ctx, digest, sig) != 0)
            return fprintf(stderr, "signfloor: a signature failed\n"), 1;
        n++;
    }
    printf("%.0f signatures/s\n", n / seconds);
    EVP_PKEY_CTX_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "server") == 0) {
        key = EVP_EC_gen("P-256");
        if (key == NULL)
            return fprintf(stderr, "signfloor: no P-256 key\n"), 1;
        return server(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "client") == 0)
        return client(argv[2], atof(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "inproc") == 0) {
        key = EVP_EC_gen("P-256");
        if (key == NULL)
            return fprintf(stderr, "signfloor: no P-256 key\n"), 1;
        return inproc(atof(argv[2]));
    }
    fprintf(stderr, "usage: signfloor server PATH | client PATH SECONDS | inproc SECONDS\n");
    return 2;
}
