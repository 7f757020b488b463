// sd-bus from libsystemd (Debian's libsystemd-dev), for KeychainSecretService only. It speaks
// D-Bus to any bus (a plain dbus-daemon too), which is all the Secret Service needs.
#include <systemd/sd-bus.h>

// glibc's secure_getenv, which its headers declare only under _GNU_SOURCE: sd_bus_open_user
// reads the bus address with it, and so does KeychainSecretService, which opens its bus itself.
extern char *secure_getenv(const char *name);
