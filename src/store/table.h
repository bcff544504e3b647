// A key -> value hash table with copied keys and values: the server's
// contents and the file store's view of its file.
#ifndef SHI_STORE_TABLE_H
#define SHI_STORE_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct shi_table_entry {
    struct shi_table_entry *next;
    uint64_t                hash;
    unsigned char          *value; // vlen bytes + a NUL, never NULL
    size_t                  vlen;
    size_t                  klen;
    char                    key[]; // klen bytes + a NUL
} shi_table_entry;

typedef struct shi_table {
    shi_table_entry **buckets;
    size_t            nbuckets, count;
} shi_table;

// Stores a copy of value under a copy of key, replacing any old value.
// SHOAL_ENOMEM leaves the table as it was.
int shi_table_put(shi_table *t, const char *key, size_t klen,
    const void *value, size_t vlen);

// The entry for key, or NULL.
const shi_table_entry *shi_table_get(
    const shi_table *t, const char *key, size_t klen);

// Removes every entry whose key starts with the `plen` bytes of prefix;
// returns how many went.
size_t shi_table_delete_prefix(shi_table *t, const char *prefix, size_t plen);

// Frees every entry; the table is empty and reusable afterwards.
void shi_table_free(shi_table *t);

#endif
