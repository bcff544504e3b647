// CPU masks as ranks exchange them (platform/cpu_place.h): this process's
// mask goes to text and back unchanged, words beyond the first hold the
// CPUs they should, and text that is no such mask is refused.
#include <string.h>

#include "platform/cpu_place.h"
#include "test.h"

TEST(affinity_text_reads_back_as_the_same_mask)
{
    char      text[SHI_AFFINITY_TEXT_MAX];
    cpu_set_t mine, back;

    CHECK(sched_getaffinity(0, sizeof(mine), &mine) == 0);
    shi_affinity_text(text, sizeof(text));
    CHECK(strlen(text) > 0 && strlen(text) % 16 == 0);
    CPU_ZERO(&back);
    CHECK(shi_affinity_add(text, &back) == 0);
    CHECK(CPU_EQUAL(&mine, &back));
}

TEST(affinity_add_takes_every_word_and_refuses_other_text)
{
    cpu_set_t set;
    char      long_text[SHI_AFFINITY_TEXT_MAX + 16];

    CPU_ZERO(&set);
    // CPUs 0 and 63 in the first word, 64 in the second, 130 in the third.
    CHECK(shi_affinity_add("8000000000000001"
                           "0000000000000001"
                           "0000000000000004",
              &set)
        == 0);
    CHECK(CPU_COUNT(&set) == 4 && CPU_ISSET(0, &set) && CPU_ISSET(63, &set)
        && CPU_ISSET(64, &set) && CPU_ISSET(130, &set));
    CHECK(shi_affinity_add("123", &set) == -1); // not whole words
    CHECK(shi_affinity_add("000000000000000g", &set) == -1);
    CHECK(shi_affinity_add("-000000000000001", &set) == -1);
    memset(long_text, '0', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0'; // one word past CPU_SETSIZE
    CHECK(shi_affinity_add(long_text, &set) == -1);
    CHECK(CPU_COUNT(&set) == 4); // the refused texts added nothing
}
