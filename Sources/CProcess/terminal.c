#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "kcfs_process.h"

int kcfs_open_pty(int *terminal) {
    int controller = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (controller < 0) return -1;
    char name[64];
    if (grantpt(controller) != 0 || unlockpt(controller) != 0 || ptsname_r(controller, name, sizeof name) != 0) {
        close(controller);
        return -1;
    }
    *terminal = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*terminal < 0) {
        close(controller);
        return -1;
    }
    return controller;
}
