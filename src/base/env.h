// Launch-environment detection: who am I (rank, size) and where is the
// rendezvous store. Sources, first match wins: an explicit shoal_config,
// SHOAL_RANK/SHOAL_SIZE/SHOAL_STORE, torchrun (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE),
// MPICH/PMI (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/SLURM_NTASKS).
#ifndef SHI_ENV_H
#define SHI_ENV_H

#include <stdint.h>

#include "shoal.h"

#define SHI_ADDR_MAX 512

typedef struct shi_launch {
    int         rank;
    int         size;
    char        store[SHI_ADDR_MAX]; // "" when size == 1 and none was given
    int         launcher_serves; // 1: the launcher serves the store
    int         store_from_env; // 1: every communicator of the job meets there
    const char *source; // where rank and size came from
} shi_launch;

// Fills *out from `cfg` (may be NULL) and the environment. Errors:
// SHOAL_EENV naming the variables looked for, or the contradiction found.
int shi_launch_detect(shi_launch *out, const shoal_config *cfg);

// Reads an integer environment variable; returns `fallback` when unset and
// SHOAL_EENV (with a message) when set but not an integer.
int shi_env_int(const char *name, long long fallback, long long *out);

// A duration in seconds, as every *_SECONDS setting takes it: a positive
// decimal number ("30", "3.5", "0.25"). Returns `fallback_ms` when unset,
// else the milliseconds (rounded, at least 1); SHOAL_EENV (with a message)
// when set but not such a number.
int shi_env_seconds(const char *name, int64_t fallback_ms, int64_t *out_ms);

// A byte count: digits with an optional K, M or G (KiB, MiB, GiB; powers of
// 1024, either case), the same in every size setting and in SHOAL_ALGO.
// Returns 0, -1 if malformed, -2 if it overflows.
int shi_parse_bytes(const char *text, size_t n, unsigned long long *out);
// shi_env_int for a byte count (SHOAL_EENV naming the variable if bad).
int shi_env_bytes(const char *name, long long fallback, long long *out);
// A size setting within lo..hi: a byte count when the name ends in _BYTES,
// else a plain number; SHOAL_EINVAL naming the variable and the range when
// outside it.
int shi_env_size(const char *name, long long fallback, long long lo,
    long long hi, long long *out);

#endif
