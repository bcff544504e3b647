// What the fuzz harnesses share. Each harness defines the libFuzzer entry
// point; built with clang's -fsanitize=fuzzer it is fuzzed (make fuzz),
// built with replay_main.c it replays the checked-in corpus (make test).
#ifndef SHOAL_FUZZ_H
#define SHOAL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A property every input must keep. Not assert(): release builds define
// NDEBUG, and the replay runs in them.
#define FUZZ_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__,       \
                __LINE__, #cond);                                             \
            abort();                                                          \
        }                                                                     \
    } while (0)

#endif
