// libFuzzer's driver entry point (compiler-rt FuzzerInterface.h). `-sanitize=fuzzer` links it.
// The targets call it from their own `main`: SwiftPM names an executable's entry point after
// its module and aliases `main` to it, which leaves no room for libFuzzer's own `main`.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv,
                        int (*test_one_input)(const uint8_t *data, size_t size));
