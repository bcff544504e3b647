// Per-call options (shoal_next_call_opts): held per thread until the
// thread's next operation takes them at its entry (shi_call_opts_take),
// then carried by that operation's request.
#include "core/ops.h"

static _Thread_local shoal_call_opts next_opts;

int
shoal_next_call_opts(const shoal_call_opts *opts)
{
    if (opts != NULL && opts->timeout_ms < 0) {
        return shi_error(SHOAL_EINVAL,
            "next_call_opts: timeout_ms %lld is negative (0 or less than 0 "
            "is not a deadline; use 0 for the communicator's default)",
            (long long) opts->timeout_ms);
    }
    next_opts = opts != NULL ? *opts : (shoal_call_opts) { 0 };
    return SHOAL_OK;
}

shoal_call_opts
shi_call_opts_take(void)
{
    shoal_call_opts taken = next_opts;

    next_opts = (shoal_call_opts) { 0 };
    return taken;
}

int
shi_missing_req(const char *op)
{
    shi_call_opts_take();
    return shi_error(SHOAL_EINVAL, "%s: req is NULL", op);
}
