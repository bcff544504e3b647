// The channel's service thread, and sending what draining owes. The
// thread drains whenever the engine's watch says a signal arrived, so
// items reach their queue and remote gets are answered while this rank's
// application computes; it sleeps otherwise.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "queue/channel.h"

// Whether peer p still takes messages (one that left needs no credit or
// answer, and a put to it would fail the communicator).
static int
live(struct shi_q_channel *ch, int p)
{
    return p == ch->rank
        || atomic_load(&ch->comm->peers[p].state) == SHI_PEER_LIVE;
}

// Tells each sender how far its ring here is read, where that moved.
// credit_mu keeps the pushes in order: a later head never lands first.
static void
push_credits(struct shi_q_channel *ch)
{
    pthread_mutex_lock(&ch->credit_mu);
    for (int s = 0; s < ch->n; s++) {
        pthread_mutex_lock(&ch->mu);
        uint64_t head         = ch->in[s].head;
        uint64_t pulled       = ch->in[s].pulled;
        int      due          = head != ch->in[s].told && !ch->closed;
        int      pull_due     = pulled != ch->in[s].pulled_told && !ch->closed;
        ch->in[s].told        = head;
        ch->in[s].pulled_told = pulled;
        pthread_mutex_unlock(&ch->mu);
        if ((due || pull_due) && ch->out[s].credit_there != NULL) {
            // Only senders mapped here ask this rank to read their items.
            atomic_store_explicit(
                ch->out[s].credit_there + 1, pulled, memory_order_release);
            atomic_store_explicit(
                ch->out[s].credit_there, head, memory_order_release);
            shi_q_ring_credit(ch, s);
            if (pull_due) {
                // An iput's request waits for this count in the sender's
                // engine, which sleeps on its doorbell, not on the bell.
                shi_ring(ch->comm, s, 0);
            }
        } else if (due && live(ch, s)) {
            shoal_window_put(ch->win, &head, sizeof(head), SHOAL_UINT8, s,
                (size_t) (ch->rank + 1) * SHI_Q_CREDIT);
        }
    }
    pthread_mutex_unlock(&ch->credit_mu);
}

static struct shi_q_owed *
next_owed(struct shi_q_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    struct shi_q_owed *o = ch->closed ? NULL : ch->owed;
    if (o != NULL) {
        ch->owed      = o->next;
        ch->owed_tail = ch->owed != NULL ? ch->owed_tail : NULL;
    }
    pthread_mutex_unlock(&ch->mu);
    return o;
}

static int
send_owed(struct shi_q_channel *ch, struct shi_q_owed *o)
{
    shoal_queue_item *it = o->item;

    if (it == NULL) {
        return shi_q_send_rec(ch, o->dst, &o->rec, SHI_NO_DEADLINE);
    }
    struct shi_q_rec rec = { .queue = o->rec.total,
        .total                      = it->bytes,
        .flags = (it->flags & SHI_Q_F_OBJECT) | SHI_Q_F_REPLY,
        .dtype = (int32_t) it->dtype,
        .arg   = it->sender,
        .ndim  = it->ndim };
    memcpy(rec.shape, it->shape, sizeof(rec.shape));
    return shi_q_send_item(ch, o->dst, &rec, it->data, SHI_NO_DEADLINE, NULL);
}

void
shi_q_flush(struct shi_q_channel *ch)
{
    struct shi_q_owed *o;

    push_credits(ch);
    while ((o = next_owed(ch)) != NULL) {
        int st = live(ch, o->dst) ? send_owed(ch, o) : SHOAL_OK;
        if (st != SHOAL_OK) {
            // The peer is gone or the communicator failed: its asks
            // end with that failure there; nothing is left to tell.
            SHI_INFO("queue: an answer to rank %d was not sent: %s", o->dst,
                shoal_last_error());
        }
        shi_q_item_free_list(o->item);
        free(o);
    }
}

static void *
service_main(void *arg)
{
    struct shi_q_channel *ch = arg;

    pthread_mutex_lock(&ch->mu);
    while (!ch->stop) {
        uint32_t seen = atomic_load(&ch->bell->service);
        // A getter that looks at the rings drains them itself: two
        // drainers would only queue on the lock behind each other's
        // copies. It rings the bell when it stops looking.
        if (atomic_load(&ch->bell->lookers) == 0) {
            shi_q_drain(ch);
        }
        int64_t now = shi_now_ns(), next = shi_q_expire(ch, now);
        pthread_mutex_unlock(&ch->mu);
        shi_q_flush(ch);
        shi_q_wait_service(ch, seen, next - now);
        pthread_mutex_lock(&ch->mu);
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

int
shi_q_service_start(struct shi_q_channel *ch)
{
    int err = pthread_create(&ch->service, NULL, service_main, ch);

    if (err != 0) {
        return shi_error(SHOAL_ESYS,
            "queue_channel_open: cannot start the service thread: %s",
            strerror(err));
    }
    return SHOAL_OK;
}

void
shi_q_service_stop(struct shi_q_channel *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->stop = 1;
    pthread_mutex_unlock(&ch->mu);
    shi_q_wake_service(ch->bell);
    pthread_join(ch->service, NULL);
}
