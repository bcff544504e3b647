// A writer of Python pickles (protocol 2), for the few shapes a flight
// record needs: dicts, lists, 2-tuples, strings, integers, booleans and
// None, appended to a growable buffer. Python's pickle.load (torch's
// flight-recorder analyser) reads the result. Nothing here reads pickles.
#ifndef SHI_PICKLE_H
#define SHI_PICKLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct shi_pickle {
    unsigned char *data;
    size_t         len, cap;
    int            failed; // out of memory: every later write is dropped
} shi_pickle;

// Starts (the protocol header) and ends (STOP) a pickle of one object.
void shi_pickle_begin(shi_pickle *p);
void shi_pickle_end(shi_pickle *p);
void shi_pickle_free(shi_pickle *p);

// Values.
void shi_pickle_str(shi_pickle *p, const char *s);
void shi_pickle_int(shi_pickle *p, int64_t v);
void shi_pickle_bool(shi_pickle *p, int v);
void shi_pickle_none(shi_pickle *p);

// Containers: open, then the items (a dict's as key, value, key, value),
// then close. A 2-tuple is its two items followed by tuple2.
void shi_pickle_dict_open(shi_pickle *p);
void shi_pickle_dict_close(shi_pickle *p);
void shi_pickle_list_open(shi_pickle *p);
void shi_pickle_list_close(shi_pickle *p);
void shi_pickle_tuple2(shi_pickle *p);

#endif
