// shoal_alloc's range where no peer maps this rank's memory (the message
// transports): SHOAL_SHM_HEAP_BYTES (the variable shared memory uses too)
// of private address space, reserved and backed only once used.
#ifndef SHI_PLATFORM_PRIVATE_HEAP_H
#define SHI_PLATFORM_PRIVATE_HEAP_H

#include <stddef.h>

// Reserves the range; *base NULL and *bytes 0 where the variable asks for
// none. Returns SHOAL_OK or an error with its text (a bad variable, no
// address space).
int shi_private_heap_map(unsigned char **base, size_t *bytes);

// Gives the range back (nothing where base is NULL).
void shi_private_heap_unmap(unsigned char *base, size_t bytes);

#endif
