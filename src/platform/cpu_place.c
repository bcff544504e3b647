#include "platform/cpu_place.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
shi_runnable_tasks(void)
{
    // "0.52 0.58 0.59 3/412 12345": the fourth field is runnable/total.
    char    text[128];
    int     fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC), fields = 0;
    ssize_t n;

    if (fd < 0) {
        return -1;
    }
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    text[n] = '\0';
    for (char *p = text; *p != '\0'; p++) {
        if (*p == ' ' && ++fields == 3) {
            char *end;
            long  runnable = strtol(p + 1, &end, 10);
            return end != p + 1 && *end == '/' && runnable >= 0
                ? (int) runnable
                : -1;
        }
    }
    return -1;
}

void
shi_affinity_text(char *buf, size_t len)
{
    cpu_set_t set;
    int       words = 0;
    size_t    at    = 0;

    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            words = cpu / 64 + 1;
        }
    }
    for (int w = 0; w < words && at + 17 <= len; w++, at += 16) {
        unsigned long long bits = 0;
        for (int b = 0; b < 64; b++) {
            bits |= CPU_ISSET(w * 64 + b, &set) ? 1ULL << b : 0;
        }
        snprintf(buf + at, len - at, "%016llx", bits);
    }
}

int
shi_affinity_add(const char *text, cpu_set_t *set)
{
    size_t n = strlen(text);

    if (n % 16 != 0 || n / 16 > CPU_SETSIZE / 64
        || strspn(text, "0123456789abcdef") != n) {
        return -1;
    }
    for (size_t w = 0; w < n / 16; w++) {
        char word[17];
        memcpy(word, text + w * 16, 16);
        word[16]                = '\0';
        unsigned long long bits = strtoull(word, NULL, 16);
        for (int b = 0; b < 64; b++) {
            if (bits >> b & 1) {
                CPU_SET((int) w * 64 + b, set);
            }
        }
    }
    return 0;
}

int
shi_move_off_cpu(const cpu_set_t *avoid)
{
    cpu_set_t mine, one;
    int       here = sched_getcpu(), target = -1;

    if (here < 0 || sched_getaffinity(0, sizeof(mine), &mine) != 0) {
        return -1;
    }
    for (int c = 0; c < CPU_SETSIZE && target < 0; c++) {
        if (c != here && CPU_ISSET(c, &mine) && !CPU_ISSET(c, avoid)) {
            target = c;
        }
    }
    if (target < 0) {
        return -1;
    }
    CPU_ZERO(&one);
    CPU_SET(target, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
        return -1;
    }
    // The mask as it was: the move is a hint, not a pin.
    sched_setaffinity(0, sizeof(mine), &mine);
    return target;
}
