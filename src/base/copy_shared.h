// Copying into memory that another process reads next (staging slabs,
// message slots, a peer's mapped buffer).
//
// Such memory was usually read by that process the last time round, so
// its lines sit in the reader's cache. An ordinary copy must take each
// line back before writing it (a read for ownership), and where the two
// processes run on different L3 domains that costs more than the copy:
// on 2 vCPUs of an AMD EPYC host, 16 KiB took 4.9 us to write and 1.3 to
// read across domains, 1.1 and 0.4 within one. Non-temporal stores
// invalidate the reader's lines without fetching them and write through
// to memory, from which the reader takes them: 0.2 + 1.4 us in either
// placement. Below SHI_COPY_SHARED_STREAM_MIN bytes the ordinary copy is
// cheaper within a domain (8 KiB: 0.6 us against 1.1), so small copies
// stay ordinary.
#ifndef SHI_COPY_SHARED_H
#define SHI_COPY_SHARED_H

#include <stddef.h>

#define SHI_COPY_SHARED_STREAM_MIN ((size_t) 16 << 10)

// Copies `bytes` from src to dst (not overlapping). The copy is complete
// and ordered before any later store of this thread (a release store of a
// flag publishes it as after memcpy).
void shi_copy_shared(void *dst, const void *src, size_t bytes);

#endif
