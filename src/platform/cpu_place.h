// Where this thread runs, and a way to move it: a waiter whose peer shares
// its CPU while another CPU idles asks the scheduler to separate them.
#ifndef SHI_PLATFORM_CPU_PLACE_H
#define SHI_PLATFORM_CPU_PLACE_H

#include <sched.h>
#include <stddef.h>

// How many tasks the machine has ready to run (running or waiting for a
// CPU): the "runnable" field of /proc/loadavg; -1 when it cannot be read.
int shi_runnable_tasks(void);

// The CPUs this process may run on, as text another rank can read back
// with shi_affinity_add: hex words of 64 CPUs each, lowest first, up to
// the last that has one (SHI_AFFINITY_TEXT_MAX bytes with its NUL). ""
// where the mask cannot be read.
#define SHI_AFFINITY_TEXT_MAX (CPU_SETSIZE / 4 + 1)
void shi_affinity_text(char *buf, size_t len);

// Adds the CPUs of a peer's shi_affinity_text to *set. Returns 0, or -1
// where the text is not such a mask (it comes from a peer: untrusted).
int shi_affinity_add(const char *text, cpu_set_t *set);

// Moves the calling thread to a CPU of its affinity mask outside `avoid`
// and other than the current one, then gives it its mask back (the
// scheduler leaves a thread where it is until it has a reason to move
// it). Returns the CPU, or -1 (none free, or the system refused).
int shi_move_off_cpu(const cpu_set_t *avoid);

#endif
