/*
 * libsecret lookups per second (bench/secret-service.sh): secret_password_lookup_sync of one
 * item by its `service` and `account` attributes, over and over on one connection for SECONDS,
 * through whichever Secret Service owns org.freedesktop.secrets on $DBUS_SESSION_BUS_ADDRESS.
 * Each lookup is what libsecret sends for it: SearchItems, then GetSecrets in its session (the
 * session is opened by the first, untimed, lookup, which also checks the secret).
 *
 *   secretlookup SERVICE ACCOUNT EXPECTED SECONDS   prints lookups=N seconds=T rate=R
 */
#include <libsecret/secret.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* No xdg:schema attribute: the items were made by other clients. */
static const SecretSchema schema = {
    .name = "org.keychainfs.Bench", .flags = SECRET_SCHEMA_DONT_MATCH_NAME,
    .attributes = { { "service", SECRET_SCHEMA_ATTRIBUTE_STRING }, { "account", SECRET_SCHEMA_ATTRIBUTE_STRING }, { NULL, 0 } }
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static gchar *lookup(const char *service, const char *account) {
    GError *error = NULL;
    gchar *p = secret_password_lookup_sync(&schema, NULL, &error, "service", service, "account", account, NULL);
    if (error) {
        fprintf(stderr, "secretlookup: %s\n", error->message);
        g_error_free(error);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: secretlookup SERVICE ACCOUNT EXPECTED SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[4]);
    gchar *p = lookup(argv[1], argv[2]);
    if (!p || strcmp(p, argv[3]) != 0) {
        fprintf(stderr, "secretlookup: the first lookup did not return the expected secret\n");
        return 1;
    }
    secret_password_free(p);
    long n = 0;
    double start = now(), elapsed;
    do {
        p = lookup(argv[1], argv[2]);
        if (!p) return 1;
        secret_password_free(p);
        n++;
        elapsed = now() - start;
    } while (elapsed < seconds);
    printf("lookups=%ld seconds=%.3f rate=%.1f\n", n, elapsed, (double)n / elapsed);
    return 0;
}
