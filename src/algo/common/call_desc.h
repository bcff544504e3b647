// What a rank called as one collective, as ranks compare it: the mapped
// family publishes it in shared memory (algo/mapped/area.h) and message
// schedules send its hash with their data (net_exec.c).
#ifndef SHI_CALL_DESC_H
#define SHI_CALL_DESC_H

#include <stdatomic.h>
#include <stdint.h>

struct shi_call_desc {
    _Atomic uint32_t seq; // written last; equals the collective's number
    uint32_t         kind;
    int32_t          root;
    uint32_t         dtype;
    uint64_t         count;
    uint32_t         redop;
    uint32_t         algo;
    uint32_t         may_hand_over; // the request's (request.h)
    uint64_t         counts_hash; // v-collectives: hash of the counts
    int64_t          arrive_ns; // when the rank called it (not hashed)
};

// Hash of a descriptor, its number included (a mix of its fields).
uint64_t shi_desc_hash(const struct shi_call_desc *d);

#endif
