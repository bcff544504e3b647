// Memory registration over UCX (the table's mem_register, for
// shoal_mem_register): the range is mapped with ucp_mem_map, which
// registers it with every UCX memory domain (pinned for RDMA devices),
// and its remote key is packed and kept. A message whose buffer lies in a
// registered range is handed to UCX with the range's handle, so its zero
// copy protocols use the registration instead of registering again.
// Registrations come from the application's threads; the engine reads
// them under ucx->reg_lock.
#include <stdlib.h>

#include "transport/ucx/ucx.h"
#include "transport/upcalls.h"

struct shi_ucx_reg {
    unsigned char      *base;
    size_t              bytes;
    ucp_mem_h           memh;
    void               *rkey; // packed remote key (ucp_rkey_pack)
    size_t              rkey_len;
    struct shi_ucx_reg *next;
};

int
shi_ucx_mem_register(shoal_comm *comm, void *base, size_t bytes, void **handle)
{
    struct shi_ucx      *ucx = shi_tp_comm(comm)->tp_state;
    struct shi_ucx_reg  *reg;
    ucp_mem_map_params_t params = {
        .field_mask
        = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = base,
        .length  = bytes,
    };
    ucs_status_t s;

    *handle = NULL;
    if (bytes == 0) {
        return SHOAL_OK; // nothing to map
    }
    if ((reg = calloc(1, sizeof(*reg))) == NULL) {
        return shi_error(SHOAL_ENOMEM, "out of memory");
    }
    reg->base  = base;
    reg->bytes = bytes;
    if ((s = ucp_mem_map(ucx->context, &params, &reg->memh)) != UCS_OK) {
        free(reg);
        return shi_error(SHOAL_ENOSPACE,
            "UCX cannot register %zu bytes at %p: %s (RDMA devices pin "
            "registered memory: see ulimit -l)",
            bytes, base, ucs_status_string(s));
    }
    s = ucp_rkey_pack(ucx->context, reg->memh, &reg->rkey, &reg->rkey_len);
    if (s != UCS_OK) {
        ucp_mem_unmap(ucx->context, reg->memh);
        free(reg);
        return shi_error(SHOAL_ENOSPACE, "UCX cannot pack a remote key: %s",
            ucs_status_string(s));
    }
    pthread_mutex_lock(&ucx->reg_lock);
    reg->next = ucx->regs;
    ucx->regs = reg;
    atomic_fetch_add(&ucx->nregs, 1);
    pthread_mutex_unlock(&ucx->reg_lock);
    *handle = reg;
    return SHOAL_OK;
}

void
shi_ucx_mem_deregister(shoal_comm *comm, void *handle)
{
    struct shi_ucx     *ucx = shi_tp_comm(comm)->tp_state;
    struct shi_ucx_reg *reg = handle;

    if (reg == NULL) {
        return;
    }
    pthread_mutex_lock(&ucx->reg_lock);
    for (struct shi_ucx_reg **p = &ucx->regs; *p != NULL; p = &(*p)->next) {
        if (*p == reg) {
            *p = reg->next;
            atomic_fetch_sub(&ucx->nregs, 1);
            break;
        }
    }
    pthread_mutex_unlock(&ucx->reg_lock);
    ucp_rkey_buffer_release(reg->rkey);
    ucp_mem_unmap(ucx->context, reg->memh);
    free(reg);
}

// The handle of a registered range holding [buf, buf + bytes), or NULL.
ucp_mem_h
shi_ucx_memh_of(struct shi_ucx *ucx, const void *buf, size_t bytes)
{
    const unsigned char *p    = buf;
    ucp_mem_h            memh = NULL;

    if (atomic_load(&ucx->nregs) == 0 || bytes == 0) {
        return NULL;
    }
    pthread_mutex_lock(&ucx->reg_lock);
    for (struct shi_ucx_reg *r = ucx->regs; r != NULL && memh == NULL;
         r                     = r->next) {
        if (p >= r->base && bytes <= r->bytes
            && (size_t) (p - r->base) <= r->bytes - bytes) {
            memh = r->memh;
        }
    }
    pthread_mutex_unlock(&ucx->reg_lock);
    return memh;
}

// Registrations the application left behind when the communicator goes.
void
shi_ucx_mem_release_all(struct shi_ucx *ucx)
{
    while (ucx->regs != NULL) {
        struct shi_ucx_reg *reg = ucx->regs;
        ucx->regs               = reg->next;
        atomic_fetch_sub(&ucx->nregs, 1);
        ucp_rkey_buffer_release(reg->rkey);
        ucp_mem_unmap(ucx->context, reg->memh);
        free(reg);
    }
}
