// Tuning files: algorithm choices measured on a machine (shoal-tune writes
// them), read when a communicator is created.
//
// Format: plain text, one rule a line, fields separated by commas (spaces
// around them ignored); '#' starts a comment; blank lines are skipped:
//
//   # collective, min bytes, max bytes, ranks, hosts, algorithm
//   allreduce,  0,   32K, 2, 1, oneshot
//   allreduce,  32K, -,   2, 1, direct
//
//   collective  allreduce (all_reduce), reduce, allgather, reducescatter,
//               alltoall, gather, scatter, broadcast, barrier
//   min bytes   the rule covers sizes >= this (K, M, G: powers of 1024)
//   max bytes   ... and < this; "-" for no bound
//   ranks       the communicator's rank count, or "*" for any
//   hosts       the number of hosts it spans, or "*" for any
//   algorithm   a name the registry has for that collective
//
// Rules are tried in file order and the first that matches a call wins;
// a size or rank count no rule covers falls through to the built-in
// table. SHOAL_ALGO's rules come before the file's.
//
// Where it is read: SHOAL_TUNING_FILE, else $XDG_CACHE_HOME/shoal/tuning
// (~/.cache/shoal/tuning when XDG_CACHE_HOME is unset). Rank 0 reads it
// and every rank uses rank 0's rules. A missing file is silent; a
// malformed one is ignored as a whole with one warning naming the file and
// line.
#ifndef SHI_TUNING_H
#define SHI_TUNING_H

#include <stddef.h>

// The tuning file's path (SHOAL_TUNING_FILE or the default) into buf;
// NULL when neither can be formed (no HOME).
const char *shi_tuning_path(char *buf, size_t len);

// Reads the rules of `path` that apply to a communicator spanning `nhosts`
// hosts, in SHOAL_ALGO syntax (select.h), into *spec (malloc'd; "" for no
// rule or no file). Returns SHOAL_OK, or SHOAL_EINVAL with a message
// naming the file and line of the first malformed rule (*spec NULL).
int shi_tuning_read(const char *path, int nhosts, char **spec);

#endif
