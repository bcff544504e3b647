// Chained hash table (see table.h). FNV-1a hashes; the bucket array
// doubles when the load passes one entry per bucket.
#include "store/table.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "shoal.h"

static uint64_t
table_hash(const char *key, size_t klen)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < klen; i++) {
        h = (h ^ (unsigned char) key[i]) * 1099511628211ull;
    }
    return h;
}

static shi_table_entry *
table_find(const shi_table *t, const char *key, size_t klen, uint64_t h)
{
    if (t->nbuckets == 0) {
        return NULL;
    }
    for (shi_table_entry *e = t->buckets[h & (t->nbuckets - 1)]; e != NULL;
         e                  = e->next) {
        if (e->hash == h && e->klen == klen
            && memcmp(e->key, key, klen) == 0) {
            return e;
        }
    }
    return NULL;
}

const shi_table_entry *
shi_table_get(const shi_table *t, const char *key, size_t klen)
{
    return table_find(t, key, klen, table_hash(key, klen));
}

// Doubles the bucket array (or makes the first one); on failure the table
// keeps its old, still correct, buckets.
static void
table_grow(shi_table *t)
{
    size_t            n = t->nbuckets ? t->nbuckets * 2 : 64;
    shi_table_entry **b = calloc(n, sizeof(*b));

    if (b == NULL) {
        return;
    }
    for (size_t i = 0; i < t->nbuckets; i++) {
        shi_table_entry *e = t->buckets[i], *next;
        for (; e != NULL; e = next) {
            next                 = e->next;
            e->next              = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(t->buckets);
    t->buckets  = b;
    t->nbuckets = n;
}

static unsigned char *
table_copy_value(const void *value, size_t vlen)
{
    unsigned char *v = malloc(vlen + 1);

    if (v != NULL) {
        if (vlen > 0) {
            memcpy(v, value, vlen);
        }
        v[vlen] = '\0';
    }
    return v;
}

int
shi_table_put(
    shi_table *t, const char *key, size_t klen, const void *value, size_t vlen)
{
    uint64_t         h = table_hash(key, klen);
    shi_table_entry *e = table_find(t, key, klen, h);
    unsigned char   *v = table_copy_value(value, vlen);

    if (v == NULL) {
        return shi_error(
            SHOAL_ENOMEM, "out of memory storing a %zu-byte value", vlen);
    }
    if (e != NULL) {
        free(e->value);
        e->value = v;
        e->vlen  = vlen;
        return SHOAL_OK;
    }
    if (t->count >= t->nbuckets) {
        table_grow(t);
        if (t->nbuckets == 0) {
            free(v);
            return shi_error(SHOAL_ENOMEM, "out of memory for the store");
        }
    }
    e = malloc(sizeof(*e) + klen + 1);
    if (e == NULL) {
        free(v);
        return shi_error(SHOAL_ENOMEM, "out of memory storing a key");
    }
    e->hash  = h;
    e->value = v;
    e->vlen  = vlen;
    e->klen  = klen;
    memcpy(e->key, key, klen);
    e->key[klen]                      = '\0';
    e->next                           = t->buckets[h & (t->nbuckets - 1)];
    t->buckets[h & (t->nbuckets - 1)] = e;
    t->count++;
    return SHOAL_OK;
}

size_t
shi_table_delete_prefix(shi_table *t, const char *prefix, size_t plen)
{
    size_t gone = 0;

    for (size_t i = 0; i < t->nbuckets; i++) {
        shi_table_entry **link = &t->buckets[i];
        while (*link != NULL) {
            shi_table_entry *e = *link;
            if (e->klen >= plen && memcmp(e->key, prefix, plen) == 0) {
                *link = e->next;
                free(e->value);
                free(e);
                gone++;
            } else {
                link = &e->next;
            }
        }
    }
    t->count -= gone;
    return gone;
}

void
shi_table_free(shi_table *t)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        shi_table_entry *e = t->buckets[i], *next;
        for (; e != NULL; e = next) {
            next = e->next;
            free(e->value);
            free(e);
        }
    }
    free(t->buckets);
    t->buckets  = NULL;
    t->nbuckets = t->count = 0;
}
