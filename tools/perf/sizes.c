// The message sizes of a run, as nccl-tests walks them: minbytes, then
// multiplied by the step factor while not above maxbytes. Each size is
// rounded down to whole elements (the printed size is count x element).
#include <stdlib.h>

#include "perf.h"

int
perf_sizes_make(perf_sizes *s, const perf_opts *o, size_t esize)
{
    int     cap = 16, n = 0;
    size_t *v = malloc((size_t) cap * sizeof(*v));

    if (v == NULL) {
        return -1;
    }
    for (double b = (double) o->minbytes; b <= (double) o->maxbytes;) {
        if (n == cap) {
            size_t *w = realloc(v, (size_t) (cap *= 2) * sizeof(*v));
            if (w == NULL) {
                free(v);
                return -1;
            }
            v = w;
        }
        size_t bytes = (size_t) b / esize * esize;
        if (n == 0 || bytes != v[n - 1]) {
            v[n++] = bytes;
        }
        // A zero or tiny start must still move forward.
        b = b * o->stepfactor > b ? b * o->stepfactor : b + (double) esize;
    }
    s->bytes = v;
    s->n     = n;
    return 0;
}

void
perf_sizes_free(perf_sizes *s)
{
    free(s->bytes);
    s->bytes = NULL;
    s->n     = 0;
}
