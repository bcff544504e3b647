// Loading UCX (ucx_lib.h says why it is not linked).
#define SHI_UCX_LIB_LOADER
#include <dlfcn.h>
#include <pthread.h>

#include "base/error.h"
#include "shoal.h"
#include "transport/ucx/ucx_lib.h"

struct shi_ucx_lib shi_ucx_lib;

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int            lib_ok;
static char           lib_error[512]; // why not

static void
lib_load(void)
{
    void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        snprintf(lib_error, sizeof(lib_error), "cannot load libucp.so.0: %s",
            dlerror());
        return;
    }
    // POSIX's way to turn dlsym's object pointer into a function pointer.
#define SHI_UCX_RESOLVE(f)                                                    \
    if ((*(void **) &shi_ucx_lib.f = dlsym(h, #f)) == NULL) {                 \
        snprintf(lib_error, sizeof(lib_error), "libucp.so.0 lacks %s", #f);   \
        return;                                                               \
    }
    SHI_UCX_FUNCS(SHI_UCX_RESOLVE)
#undef SHI_UCX_RESOLVE
    lib_ok = 1;
}

int
shi_ucx_lib_load(void)
{
    pthread_once(&lib_once, lib_load);
    return lib_ok ? SHOAL_OK
                  : shi_error(SHOAL_ENOTSUP,
                      "UCX: %s (install UCX's library: Debian "
                      "libucx0)",
                      lib_error);
}
