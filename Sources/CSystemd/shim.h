// sd-bus from libsystemd (Debian's libsystemd-dev), for KeychainSecretService only. It speaks
// D-Bus to any bus (a plain dbus-daemon too), which is all the Secret Service needs.
#include <systemd/sd-bus.h>
