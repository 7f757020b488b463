// The low-level API is used so that kernel entries can be invalidated on lock.
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
