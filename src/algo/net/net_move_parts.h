// The pieces shared by the data-moving message schedules
// (net_move_parts.c). Private to the schedule builders.
#ifndef SHI_NET_MOVE_PARTS_H
#define SHI_NET_MOVE_PARTS_H

#include "algo/net/net_gen.h"

// This rank's block of an all-gather: sendbuf, or its place in recvbuf.
net_loc net_ag_own(const net_gen *g, const net_blocks *b);

#endif
