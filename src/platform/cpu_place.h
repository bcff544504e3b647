// Where this thread runs, and a way to move it: a waiter whose peer shares
// its CPU while another CPU idles asks the scheduler to separate them.
#ifndef SHI_PLATFORM_CPU_PLACE_H
#define SHI_PLATFORM_CPU_PLACE_H

#include <sched.h>

// How many tasks the machine has ready to run (running or waiting for a
// CPU): the "runnable" field of /proc/loadavg; -1 when it cannot be read.
int shi_runnable_tasks(void);

// Moves the calling thread to a CPU of its affinity mask outside `avoid`
// and other than the current one, then gives it its mask back (the
// scheduler leaves a thread where it is until it has a reason to move
// it). Returns the CPU, or -1 (none free, or the system refused).
int shi_move_off_cpu(const cpu_set_t *avoid);

#endif
