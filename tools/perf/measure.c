// The measurement loop every table shares.
//
// Per iteration: (untimed) in cold mode move the buffers on
// (perf_buffers_rotate), fill the send data, shoal_barrier, time the
// operation on this rank alone, (untimed) shoal_barrier and count wrong
// elements. Warm-up iterations skip the fill and the check. The barrier
// before the check keeps one rank's check out of another's timed
// operation: where two ranks share a CPU (beside a busy process) the
// first to finish would otherwise run its check while the other still
// needs the CPU to finish, and that rank's time would grow with the
// check's (4 KiB all_reduce: 46.7 us with it, 2.9 us without). The number of
// timed iterations may shrink with the size (--iter_bytes; perf_iters_for).
// Afterwards the per-iteration times go to rank 0 (perf_collect), which keeps
// the maximum over ranks.
#include "perf.h"

int
perf_measure(perf_ctx *c, const perf_measure_ops *m, void *arg, int index,
    perf_stats *st, double *wrong)
{
    const perf_opts *o      = c->o;
    double           bad    = 0;
    int              iters  = perf_iters_for(o, c->sizes.bytes[index]);
    int              warmup = perf_warmup_for(o, c->sizes.bytes[index]);
    int              total  = warmup + iters;

    for (int it = 0; it < total; it++) {
        int timed = it >= warmup;
        int check = timed && o->check && m->verify != NULL;
        perf_buffers_rotate(c, index, it);
        if (check && m->prepare != NULL) {
            m->prepare(c, arg, index, it);
        }
        int rc = shoal_barrier(c->comm);
        if (rc != SHOAL_OK) {
            return perf_fail(c, "shoal_barrier", rc);
        }
        double t0 = perf_now();
        rc        = m->run(c, arg, index);
        double t  = perf_now() - t0;
        if (rc != SHOAL_OK) {
            return rc; // run() reported it
        }
        if (timed) {
            c->times[it - warmup] = t / m->divisor;
        }
        if (check) {
            if ((rc = shoal_barrier(c->comm)) != SHOAL_OK) {
                return perf_fail(c, "shoal_barrier", rc);
            }
            bad += (double) m->verify(c, arg, index, it);
        }
    }
    return perf_collect(c, c->times, iters, bad, st, wrong);
}
