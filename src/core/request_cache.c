// Request blocks kept for reuse: each thread keeps the last few blocks it
// freed for its next non-blocking calls. A small exchange (irecv, isend,
// two waits, two frees) otherwise pays malloc and free twice per
// iteration: about 260 instructions of its 2,900 (callgrind, 64 bytes on
// 2 ranks), where a spare costs a dozen. A thread's spares go with the
// thread (a key destructor), the main thread's when the library unloads.
//
// AddressSanitizer (and MemorySanitizer) builds keep no spares, so that a
// request used after its free still shows up there; valgrind cannot see
// such a use of a kept block.
#include <pthread.h>
#include <stdlib.h>

#include "core/request.h"

#if defined(__SANITIZE_ADDRESS__)
#define REQ_SPARES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define REQ_SPARES 0
#endif
#endif
#ifndef REQ_SPARES
#define REQ_SPARES 4 // two requests per exchange, with room for a batch
#endif

#if REQ_SPARES > 0

struct req_spares {
    shoal_request *block[REQ_SPARES];
    int            n;
    int            keyed; // the key's destructor will free them
};

static _Thread_local struct req_spares spares;
static pthread_key_t                   spares_key;
static pthread_once_t                  spares_once = PTHREAD_ONCE_INIT;
static int                             spares_key_ok;

static void
free_spares(void *arg)
{
    struct req_spares *s = arg;

    while (s->n > 0) {
        free(s->block[--s->n]);
    }
}

static void
make_key(void)
{
    spares_key_ok = pthread_key_create(&spares_key, free_spares) == 0;
}

// The main thread's spares (key destructors do not run at exit), and no
// destructor left pointing into an unloaded library.
__attribute__((destructor)) static void
drop_spares_at_unload(void)
{
    free_spares(&spares);
    if (spares_key_ok) {
        pthread_key_delete(spares_key);
        spares_key_ok = 0;
    }
}

shoal_request *
shi_req_alloc(void)
{
    if (spares.n > 0) {
        return spares.block[--spares.n];
    }
    return malloc(sizeof(shoal_request));
}

void
shi_req_release(shoal_request *req)
{
    if (req == NULL) {
        return;
    }
    if (!spares.keyed) { // once per thread: its spares go with it
        pthread_once(&spares_once, make_key);
        spares.keyed
            = spares_key_ok && pthread_setspecific(spares_key, &spares) == 0
            ? 1
            : -1; // no key: this thread keeps none
    }
    if (spares.n < REQ_SPARES && spares.keyed == 1) {
        spares.block[spares.n++] = req;
        return;
    }
    free(req);
}

#else

shoal_request *
shi_req_alloc(void)
{
    return malloc(sizeof(shoal_request));
}

void
shi_req_release(shoal_request *req)
{
    free(req);
}

#endif
