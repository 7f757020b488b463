// Default options for the sanitizer runtimes, compiled in only by scripts/sanitize.sh.
//
// A daemon started by the client gets a scrubbed environment (DaemonClient.spawnDetached), and
// mount(8) runs its helpers with a clean one, so ASAN_OPTIONS/TSAN_OPTIONS never reach it. The
// script instead bakes the options (a log_path for reports, suppression files) into sanitized
// builds with -Xcc -DKCFS_ASAN_OPTIONS=... and friends. A normal build defines none of these
// macros and this file compiles to nothing. An options variable in the environment still
// overrides these defaults in processes that receive it.

#ifdef KCFS_ASAN_OPTIONS
__attribute__((used, visibility("default")))
const char *__asan_default_options(void) { return KCFS_ASAN_OPTIONS; }
#endif

#ifdef KCFS_LSAN_OPTIONS
__attribute__((used, visibility("default")))
const char *__lsan_default_options(void) { return KCFS_LSAN_OPTIONS; }
#endif

#ifdef KCFS_TSAN_OPTIONS
__attribute__((used, visibility("default")))
const char *__tsan_default_options(void) { return KCFS_TSAN_OPTIONS; }
#endif

// Keeps the translation unit non-empty in normal builds (ISO C forbids an empty one).
typedef int kcfs_sanitizer_options_unused;
