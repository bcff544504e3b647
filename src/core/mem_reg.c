// Memory registration (shoal_mem_register; shoal.h says what it buys).
//
// A registration records where a buffer lies (the shared heap, or memory
// a shared-memory transport's peers read through the kernel, which it
// locks in RAM) and what the transport prepared for it. Registrations are
// listed per communicator so that destroying the communicator releases
// the transport's part of each; the registration itself stays the
// caller's to free.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "core/comm.h"

struct shoal_mem_reg {
    shoal_comm    *comm; // NULL once its communicator is gone
    void          *ptr;
    size_t         bytes;
    int            kind;
    void          *tp_handle;
    shoal_mem_reg *next; // mem_regs
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static shoal_mem_reg  *mem_regs;

static int
in_shared_heap(shoal_comm *comm, const void *ptr, size_t bytes)
{
    unsigned char *base;
    size_t         len;
    int            shared;

    const unsigned char *p = ptr;

    comm->tp->heap_region(comm, &base, &len, &shared);
    return shared && p >= base && p < base + len
        && bytes <= len - (size_t) (p - base);
}

// Where the buffer lies and what that makes of it.
static int
classify(shoal_comm *comm, void *ptr, size_t bytes)
{
    if (in_shared_heap(comm, ptr, bytes)) {
        return SHOAL_MEM_SHARED;
    }
    if (comm->tp->klass != SHI_TP_MAPPED || bytes == 0) {
        return SHOAL_MEM_PLAIN;
    }
    if (mlock(ptr, bytes) != 0) {
        SHI_INFO("memory registration: %zu bytes at %p not locked in RAM "
                 "(%s; RLIMIT_MEMLOCK bounds it): peers still read them "
                 "through the kernel",
            bytes, ptr, strerror(errno));
        return SHOAL_MEM_PLAIN;
    }
    return SHOAL_MEM_PINNED;
}

static void
release(shoal_mem_reg *r)
{
    if (r->comm == NULL) {
        return;
    }
    if (r->tp_handle != NULL && r->comm->tp->mem_deregister != NULL) {
        r->comm->tp->mem_deregister(r->comm, r->tp_handle);
    }
    if (r->kind == SHOAL_MEM_PINNED) {
        munlock(r->ptr, r->bytes);
    }
    r->comm      = NULL;
    r->tp_handle = NULL;
}

int
shoal_mem_register(
    shoal_comm *comm, void *ptr, size_t bytes, shoal_mem_reg **out)
{
    shoal_mem_reg *r;
    int            st;

    if (out == NULL || comm == NULL || (ptr == NULL && bytes > 0)) {
        return shi_error(SHOAL_EINVAL,
            "mem_register: need a communicator, a buffer and an out "
            "pointer");
    }
    *out = NULL;
    if ((st = shi_fork_check(comm, "mem_register")) != SHOAL_OK) {
        return st;
    }
    if ((r = calloc(1, sizeof(*r))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    r->comm  = comm;
    r->ptr   = ptr;
    r->bytes = bytes;
    r->kind  = classify(comm, ptr, bytes);
    if (comm->tp->mem_register != NULL
        && (st = comm->tp->mem_register(comm, ptr, bytes, &r->tp_handle))
            != SHOAL_OK) {
        release(r);
        free(r);
        return shi_comm_error(comm, st);
    }
    pthread_mutex_lock(&mem_lock);
    r->next  = mem_regs;
    mem_regs = r;
    pthread_mutex_unlock(&mem_lock);
    *out = r;
    return SHOAL_OK;
}

int
shoal_mem_deregister(shoal_mem_reg *reg)
{
    if (reg == NULL) {
        return SHOAL_OK;
    }
    pthread_mutex_lock(&mem_lock);
    for (shoal_mem_reg **p = &mem_regs; *p != NULL; p = &(*p)->next) {
        if (*p == reg) {
            *p = reg->next;
            break;
        }
    }
    release(reg);
    pthread_mutex_unlock(&mem_lock);
    free(reg);
    return SHOAL_OK;
}

int
shoal_mem_reg_kind(const shoal_mem_reg *reg)
{
    return reg != NULL
        ? reg->kind
        : shi_error(SHOAL_EINVAL, "mem_reg_kind: the registration is NULL");
}

void
shi_mem_reg_detach_all(shoal_comm *comm)
{
    pthread_mutex_lock(&mem_lock);
    for (shoal_mem_reg *r = mem_regs; r != NULL; r = r->next) {
        if (r->comm == comm) {
            release(r);
        }
    }
    pthread_mutex_unlock(&mem_lock);
}
