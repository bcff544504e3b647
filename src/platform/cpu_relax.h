// A busy-wait's pause: tells the CPU this thread spins (x86 PAUSE, arm
// YIELD), so that a sibling hyperthread runs and the exit from the loop
// is not mis-speculated.
#ifndef SHI_CPU_RELAX_H
#define SHI_CPU_RELAX_H

static inline void
shi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#endif
