// Schedules of the reducing collectives across hosts: all-reduce (ring,
// recursive doubling), reduce (flat, ring), reduce-scatter and its
// v-form (flat, ring). S is the message in bytes, B = S / n a block, P
// the pieces of a block (piece_bytes each); alpha is a message's latency,
// beta the time per byte on a link, gamma per reduced byte.
//
// Common rules. Ring and recursive doubling (all dtypes but float16 and
// bfloat16): PREMUL_SUM: every rank first scales its own input once (into
// its receive buffer where that holds the whole input, else into scratch)
// and everything after combines with SUM. AVG: combines with SUM and
// divides each final block once, before it is passed on. Partials are
// combined in a fixed order, received partial first, so results do not
// depend on timing; every rank of an all-reduce gets the same bits.
// Receives are posted at once where their buffer is free.
//
// Reduction from raw inputs (net_raw below): every rank sends its
// unscaled input of block c to the rank that reduces c, which combines
// the n inputs of each piece at once, in rank order, with the call's own
// op (REDUCE_ALL: shi_reduce, the kernel shared memory runs). The flat
// algorithms use it for every dtype, and every algorithm for float16 and
// bfloat16: there it is what keeps shoal.h's promise (accumulate in
// float32, round once) and gives the same bits as shared memory, AVG and
// PREMUL_SUM included. The ring and recursive doubling cannot: their
// partials travel in the 16-bit type, rounded at every hop, and in an
// order that is not rank order (the ring's starts at the block's own
// rank, recursive doubling's is a tree); float32 partials on the wire
// would double their bytes and still not be in rank order. Raw inputs
// cost no more: the owner of a block receives (n-1) B in the 16-bit type,
// as in the ring's reduce-scatter, from the n - 1 others at once instead
// of from one neighbour. Pieces (the ring's sizes): piece j of the
// owner's block is received into row j % R of n - 1 piece-sized slots
// (R rows: NET_POOL_SLOTS slots in all, at least 2 rows), a row reused
// once the reduction of its last piece ran; on 2 ranks with the result
// apart from the owner's input, straight into the result's place, as the
// ring's direct mode. Cost per owner: alpha + (n-1) B beta + n B gamma,
// plus (P - 1) piece times to fill the pipeline; scratch (n-1) B (flat)
// or up to max(NET_POOL_SLOTS, 2 (n-1)) pieces (none in that 2-rank
// case).
//
// Ring reduce-scatter (ring_rs below): blocks b_0 .. b_{n-1}; at step s
// (0 .. n-2) rank r sends block r + shift - s to r + 1 (its own input at
// s = 0, else the partial it made at step s - 1) and receives block
// r + shift - s - 1 from r - 1, combining it with its own input; after
// n - 1 steps it holds block r + shift + 1 reduced over all ranks. Every
// block is cut into pieces, each its own message and reduction, and piece
// j of a step waits only for piece j of the previous step, so transfers
// and reductions overlap. Where partials live:
//   direct: in the receive buffer at the block's place (all-reduce out of
//     place, the reduce root): receive there, reduce in place with the
//     input from sendbuf;
//   pool: the input is in the receive buffer (in place, premultiplied):
//     receive into NET_POOL_SLOTS piece-sized scratch slots, reduce into
//     the receive buffer; a slot is reused once its reduction ran, so no
//     receive ever waits for a send (scratch: up to 64 pieces);
//   step2: no receive buffer of that size (reduce-scatter, reduce
//     non-roots): two block-sized scratch buffers, step s receiving into
//     buffer s % 2 once the send of step s - 1 out of it finished
//     (scratch: 2 B); the last reduction may go to the receive buffer.
//
// The pieces shared by the reducing schedules (each algorithm's own file
// says its steps: algo/allreduce/allreduce_ring.c and allreduce_rhd.c,
// algo/reduce/reduce_flat.c and reduce_ring.c, algo/reducescatter/
// reduce_scatter_flat.c and reduce_scatter_ring.c).
#include "algo/net/net_reduce_parts.h"

#include <stdint.h>

#include "base/error.h"

// ---------------------------------------------------------------------------
// Shared pieces
// ---------------------------------------------------------------------------

// Result of one rank alone: its input, scaled for PREMUL_SUM.
int
net_reduce_alone(net_gen *g, net_loc dst, net_loc src, uint64_t bytes)
{
    if (net_is_premul(g)) {
        net_premul(g, dst, src, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
    } else {
        net_copy(g, dst, src, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
    }
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// ---------------------------------------------------------------------------
// Reduction from raw inputs
// ---------------------------------------------------------------------------

// Where the blocks of a reduction from raw inputs go and come from.
typedef struct net_raw {
    // In.
    const net_blocks *b;
    const size_t     *base; // net_piece_base(b)
    const net_loc    *in; // this rank's input of block c, unscaled
    const int        *owner; // the rank reducing block c
    net_loc           out; // where this rank's block's result goes
    // Out.
    int *fin; // per piece of this rank's block: the reduction making it
    int *sent; // per piece of every block (index base[c] + j): its send
} net_raw;

// The block `r` reduces, or -1.
static int
net_raw_mine(const net_raw *x, int r)
{
    for (int c = 0; c < x->b->n; c++) {
        if (x->owner[c] == r) {
            return c;
        }
    }
    return -1;
}

// Receive rows: row k holds one piece from each of the n - 1 others. As
// many rows as NET_POOL_SLOTS pieces allow, at least two, so that the
// next piece's receives are posted while one is reduced; no more than
// the block has pieces.
static size_t
net_raw_rows(const net_gen *g, size_t npieces)
{
    size_t rows = NET_POOL_SLOTS / (size_t) (g->n - 1);

    rows = rows < 2 ? 2 : rows;
    return rows < npieces ? rows : npieces;
}

// One dependency for all of deps[0 .. k-1] but the last, which the
// caller passes on as a second dependency (JOINs for the rest).
static int
net_join_all_but_last(net_gen *g, const int *deps, int k)
{
    int d = SHI_SOP_NODEP;

    for (int i = 0; i + 1 < k; i++) {
        d = net_join(g, d, deps[i]);
    }
    return d;
}

// Sends this rank's input of every block another rank reduces, piece by
// piece, all at once (nothing to wait for: the input is never scaled).
static void
net_raw_send(net_gen *g, net_raw *x)
{
    const net_blocks *b  = x->b;
    size_t            es = g->es;

    for (int c = 0; c < b->n; c++) {
        if (x->owner[c] == g->r) {
            continue;
        }
        for (size_t j = 0; j < net_npieces(g, b->cnt[c]); j++) {
            x->sent[x->base[c] + j]
                = net_send(g, x->owner[c], net_plus(x->in[c], j * g->pe * es),
                    net_piece_cnt(g, b->cnt[c], j) * es, SHI_SOP_NODEP,
                    SHI_SOP_NODEP);
        }
    }
}

// Receives piece j of block `c` from every other rank into `row` (once
// *row_free, the last reduction reading it, ran) and reduces it with this
// rank's own piece. Returns the reduction, now *row_free.
static int
net_raw_piece(net_gen *g, net_raw *x, int c, size_t j, net_loc row,
    uint64_t slot, int *row_free, int *deps)
{
    uint64_t o     = j * g->pe * g->es;
    uint64_t bytes = net_piece_cnt(g, x->b->cnt[c], j) * g->es;
    int      k     = 0;

    for (int q = 0; q < g->n; q++) {
        if (q != g->r) {
            deps[k] = net_recv(g, q, net_plus(row, (uint64_t) k * slot), bytes,
                *row_free, SHI_SOP_NODEP);
            k++;
        }
    }
    int all_but_last = net_join_all_but_last(g, deps, k);

    *row_free = net_reduce_all(g, net_plus(x->out, o), net_plus(x->in[c], o),
        row, slot, bytes, all_but_last, deps[k - 1]);
    return *row_free;
}

// Whether the one other rank's pieces are received straight into the
// result's place and reduced there (two ranks, the result not over this
// rank's input): no scratch and one place fewer in the cache per piece.
static int
net_raw_direct(const net_gen *g, const net_raw *x, int mine)
{
    net_loc own = x->in[mine];

    return g->n == 2 && (x->out.buf != own.buf || x->out.off != own.off);
}

// The reduction from raw inputs: every rank sends its input of block c to
// owner[c], which combines all n inputs of each piece in rank order with
// one REDUCE_ALL (the shared-memory kernel: the same bits as there).
static int
net_raw_run(net_gen *g, net_raw *x)
{
    int    mine = net_raw_mine(x, g->r);
    size_t np   = mine < 0 ? 0 : net_npieces(g, x->b->cnt[mine]);

    x->sent = net_tmp_deps(g, x->base[x->b->n]);
    x->fin  = net_tmp_deps(g, np);
    if (x->sent == NULL || x->fin == NULL) {
        return SHOAL_ENOMEM;
    }
    net_raw_send(g, x);
    if (np == 0) {
        return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
    }
    int      direct   = net_raw_direct(g, x, mine);
    size_t   rows     = direct ? 1 : net_raw_rows(g, np);
    size_t   pcnt     = g->pe < x->b->cnt[mine] ? g->pe : x->b->cnt[mine];
    uint64_t slot     = pcnt * g->es;
    uint64_t row      = (uint64_t) (g->n - 1) * slot;
    uint64_t scr      = direct ? 0 : net_scratch(g, rows * row);
    int     *row_free = net_tmp_deps(g, rows);
    int     *deps     = net_tmp_deps(g, (size_t) g->n);
    if (row_free == NULL || deps == NULL) {
        return SHOAL_ENOMEM;
    }
    for (size_t j = 0; j < np; j++) {
        net_loc at = direct ? net_plus(x->out, j * g->pe * g->es)
                            : net_at(SHI_SBUF_SCRATCH, scr + (j % rows) * row);
        if (direct) {
            row_free[0] = SHI_SOP_NODEP; // every piece its own place
        }
        x->fin[j] = net_raw_piece(
            g, x, mine, j, at, slot, &row_free[j % rows], deps);
    }
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// Owners for blocks b_c reduced by rank c.
static int *
net_owner_per_rank(net_gen *g)
{
    int *owner = net_tmp(g, (size_t) g->n, sizeof(int));

    for (int c = 0; owner != NULL && c < g->n; c++) {
        owner[c] = c;
    }
    return owner;
}

// ---------------------------------------------------------------------------
// The ring reduce-scatter
// ---------------------------------------------------------------------------

int
ring_rs_run(net_gen *g, ring_rs *rs)
{
    const net_blocks *b  = rs->b;
    const net_inputs *in = rs->in;
    int               n = g->n, r = g->r, right = net_mod(r + 1, n);
    int               left = net_mod(r - 1, n);
    size_t            es = g->es, pe = g->pe;
    size_t            pmax = net_npieces(g, b->max);
    uint64_t          blk = b->max * es, slot_bytes = 0, scr = 0;
    size_t            nslots = 0, q = 0;
    int              *part     = net_tmp_deps(g, pmax); // partial pieces
    int              *busy     = net_tmp_deps(g, 2 * pmax); // step2 slots
    int              *pool     = net_tmp_deps(g, NET_POOL_SLOTS);
    net_loc           part_loc = net_at(SHI_SBUF_RECV, 0);

    rs->fin   = net_tmp_deps(g, pmax);
    rs->touch = net_tmp_deps(g, rs->base[n]);
    if (part == NULL || busy == NULL || pool == NULL || rs->fin == NULL
        || rs->touch == NULL) {
        return SHOAL_ENOMEM;
    }
    if (rs->mode == RING_POOL) {
        // Every block but the first one sent is received once.
        size_t total
            = rs->base[n] - net_npieces(g, b->cnt[net_mod(r + rs->shift, n)]);
        nslots     = total < NET_POOL_SLOTS ? total : NET_POOL_SLOTS;
        slot_bytes = (pe < b->max ? pe : b->max) * es;
        scr        = net_scratch(g, nslots * slot_bytes);
    } else if (rs->mode == RING_STEP2) {
        scr = net_scratch(g, (n > 2 ? 2 : 1) * blk);
    }

    for (int s = 0; s < n - 1; s++) {
        int cs   = net_mod(r + rs->shift - s, n);
        int cr   = net_mod(r + rs->shift - s - 1, n);
        int last = s == n - 2;

        for (size_t j = 0; j < net_npieces(g, b->cnt[cs]); j++) {
            uint64_t bytes = net_piece_cnt(g, b->cnt[cs], j) * es;
            net_loc  src
                = net_plus(s == 0 ? in->loc[cs] : part_loc, j * pe * es);
            int dep = s == 0 ? in->dep[cs] : part[j];
            int snd = net_send(g, right, src, bytes, dep, SHI_SOP_NODEP);
            if (rs->mode != RING_STEP2 && src.buf == SHI_SBUF_RECV) {
                rs->touch[rs->base[cs] + j] = snd;
            }
            if (rs->mode == RING_STEP2 && s > 0) {
                busy[(size_t) ((s - 1) % 2) * pmax + j] = snd;
            }
        }

        net_loc acc = net_at(SHI_SBUF_RECV, b->off[cr] * es);
        if (rs->mode == RING_STEP2) {
            acc = last && rs->fin_to_recv
                ? net_at(SHI_SBUF_RECV, 0)
                : net_at(SHI_SBUF_SCRATCH, scr + (uint64_t) (s % 2) * blk);
        }
        for (size_t j = 0; j < net_npieces(g, b->cnt[cr]); j++) {
            uint64_t o     = j * pe * es;
            uint64_t bytes = net_piece_cnt(g, b->cnt[cr], j) * es;
            net_loc  mine  = net_plus(in->loc[cr], o);
            net_loc  dst   = net_plus(acc, o);
            int      rcv, red;

            if (rs->mode == RING_DIRECT) {
                // Straight into place, then reduce in place with sendbuf.
                rcv = net_recv(
                    g, left, dst, bytes, SHI_SOP_NODEP, SHI_SOP_NODEP);
                red = net_reduce(g, dst, dst, mine, bytes, rcv, in->dep[cr]);
            } else if (rs->mode == RING_POOL) {
                size_t  k  = q++ % nslots;
                net_loc sl = net_at(SHI_SBUF_SCRATCH, scr + k * slot_bytes);
                rcv = net_recv(g, left, sl, bytes, pool[k], SHI_SOP_NODEP);
                red = net_reduce(g, dst, sl, mine, bytes, rcv, in->dep[cr]);
                pool[k] = red;
            } else {
                size_t  k  = (size_t) (s % 2) * pmax + j;
                net_loc sl = net_at(
                    SHI_SBUF_SCRATCH, scr + (uint64_t) (s % 2) * blk + o);
                rcv = net_recv(g, left, sl, bytes, busy[k], SHI_SOP_NODEP);
                red = net_reduce(g, dst, sl, mine, bytes, rcv, in->dep[cr]);
                busy[k] = red;
            }
            if (last && net_is_avg(g)) {
                red = net_avg(g, dst, bytes, red);
            }
            if (rs->mode != RING_STEP2) {
                rs->touch[rs->base[cr] + j] = red;
            }
            part[j] = red;
        }
        part_loc = acc;
    }
    for (size_t j = 0; j < pmax; j++) {
        rs->fin[j] = part[j];
    }
    rs->fin_loc = part_loc;
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// ---------------------------------------------------------------------------
// all_reduce
// ---------------------------------------------------------------------------

// Where this rank's input is: sendbuf, or recvbuf in place.
net_loc
net_input_at(int in_place, uint64_t off)
{
    return net_at(in_place ? SHI_SBUF_RECV : SHI_SBUF_SEND, off);
}

// This rank's input of every block of `b`, unscaled: in recvbuf where
// `in_place`, else in sendbuf, at the block's offset.
static net_loc *
net_raw_inputs(net_gen *g, const net_blocks *b, int in_place)
{
    net_loc *in = net_tmp(g, (size_t) b->n, sizeof(net_loc));

    for (int c = 0; in != NULL && c < b->n; c++) {
        in[c] = net_input_at(in_place, b->off[c] * g->es);
    }
    return in;
}

// Sends the reduced block of this rank to every other rank, piece by
// piece as it is made, and receives theirs into recvbuf; in place, a
// piece is received only once this rank's input there has been sent.
static void
net_raw_allgather(net_gen *g, const net_raw *x)
{
    const net_blocks *b  = x->b;
    size_t            es = g->es, pe = g->pe;

    for (int p = 0; p < g->n; p++) {
        if (p == g->r) {
            continue;
        }
        for (size_t j = 0; j < net_npieces(g, b->cnt[g->r]); j++) {
            net_send(g, p, net_at(SHI_SBUF_RECV, (b->off[g->r] + j * pe) * es),
                net_piece_cnt(g, b->cnt[g->r], j) * es, x->fin[j],
                SHI_SOP_NODEP);
        }
        for (size_t j = 0; j < net_npieces(g, b->cnt[p]); j++) {
            int after = x->in[p].buf == SHI_SBUF_RECV ? x->sent[x->base[p] + j]
                                                      : SHI_SOP_NODEP;
            net_recv(g, p, net_at(SHI_SBUF_RECV, (b->off[p] + j * pe) * es),
                net_piece_cnt(g, b->cnt[p], j) * es, after, SHI_SOP_NODEP);
        }
    }
}

// float16 and bfloat16 (any algorithm): rank r reduces block r from raw
// inputs, then every reduced block goes to every rank.
int
net_allreduce_raw(net_gen *g)
{
    net_blocks b;
    int        st = net_blocks_split(g, &b, g->c->count);

    if (st != SHOAL_OK) {
        return st;
    }
    net_set_piece(g, b.max);
    net_raw x = { .b = &b,
        .base        = net_piece_base(g, &b),
        .in          = net_raw_inputs(g, &b, g->c->in_place),
        .owner       = net_owner_per_rank(g),
        .out         = net_at(SHI_SBUF_RECV, b.off[g->r] * g->es) };
    if (x.base == NULL || x.in == NULL || x.owner == NULL) {
        return SHOAL_ENOMEM;
    }
    st = net_raw_run(g, &x);
    if (st != SHOAL_OK) {
        return st;
    }
    net_raw_allgather(g, &x);
    return g->nomem ? SHOAL_ENOMEM : SHOAL_OK;
}

// The single-block inputs of reduce: sendbuf, or recvbuf on an in-place
// root; premultiplied into recvbuf on the root.
int
net_reduce_inputs(net_gen *g, net_inputs *in, net_blocks *b)
{
    int root = g->r == g->c->root;

    net_loc *orig = net_tmp(g, (size_t) b->n, sizeof(net_loc));
    if (orig == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int c = 0; c < b->n; c++) {
        orig[c] = net_input_at(root && g->c->in_place, b->off[c] * g->es);
    }
    return net_inputs_make(g, in, b, orig, root);
}

// Sends this rank's reduced block (rank p reduces block p) to the root,
// which receives every other block into recvbuf; in place, a piece only
// once the root's own input there has been sent.
static void
net_raw_to_root(net_gen *g, const net_raw *x)
{
    const net_blocks *b  = x->b;
    size_t            es = g->es, pe = g->pe;
    int               root = g->c->root;

    if (g->r != root) {
        for (size_t j = 0; j < net_npieces(g, b->cnt[g->r]); j++) {
            net_send(g, root, net_plus(x->out, j * pe * es),
                net_piece_cnt(g, b->cnt[g->r], j) * es, x->fin[j],
                SHI_SOP_NODEP);
        }
        return;
    }
    for (int p = 0; p < g->n; p++) {
        for (size_t j = 0; p != root && j < net_npieces(g, b->cnt[p]); j++) {
            int after = x->in[p].buf == SHI_SBUF_RECV ? x->sent[x->base[p] + j]
                                                      : SHI_SOP_NODEP;
            net_recv(g, p, net_at(SHI_SBUF_RECV, (b->off[p] + j * pe) * es),
                net_piece_cnt(g, b->cnt[p], j) * es, after, SHI_SOP_NODEP);
        }
    }
}

// reduce from raw inputs. split: n blocks, rank p reduces block p (into
// scratch off the root) and sends it to the root; else one block, which
// the root reduces.
int
net_reduce_raw(net_gen *g, int split)
{
    int        root = g->r == g->c->root;
    net_blocks b;
    int        st = split ? net_blocks_split(g, &b, g->c->count)
                          : net_blocks_one(g, &b, g->c->count);

    if (st != SHOAL_OK) {
        return st;
    }
    if (split) {
        net_set_piece(g, b.max);
    }
    int *owner = split ? net_owner_per_rank(g) : net_tmp(g, 1, sizeof(int));
    if (owner != NULL && !split) {
        owner[0] = g->c->root;
    }
    net_raw x = { .b = &b,
        .base        = net_piece_base(g, &b),
        .in          = net_raw_inputs(g, &b, root && g->c->in_place),
        .owner       = owner,
        .out = net_at(SHI_SBUF_RECV, split ? b.off[g->r] * g->es : 0) };
    if (x.base == NULL || x.in == NULL || x.owner == NULL) {
        return SHOAL_ENOMEM;
    }
    if (split && !root) {
        x.out = net_at(SHI_SBUF_SCRATCH, net_scratch(g, b.cnt[g->r] * g->es));
    }
    st = net_raw_run(g, &x);
    if (st == SHOAL_OK && split) {
        net_raw_to_root(g, &x);
    }
    return st == SHOAL_OK && g->nomem ? SHOAL_ENOMEM : st;
}

// Blocks of sendbuf per rank, this rank's inputs (its own block in recvbuf
// when in place), premultiplied into scratch.
int
net_rs_inputs(net_gen *g, net_inputs *in, net_blocks *b)
{
    int st = net_blocks_per_rank(g, b, g->c->counts);
    if (st != SHOAL_OK) {
        return st;
    }
    net_loc *orig = net_tmp(g, (size_t) b->n, sizeof(net_loc));
    if (orig == NULL) {
        return SHOAL_ENOMEM;
    }
    for (int c = 0; c < b->n; c++) {
        orig[c] = c == g->r && g->c->in_place
            ? net_at(SHI_SBUF_RECV, 0)
            : net_at(SHI_SBUF_SEND, b->off[c] * g->es);
    }
    return net_inputs_make(g, in, b, orig, 0);
}

// One rank: its own block is the result (recvbuf is sendbuf in place).
int
net_rs_alone(net_gen *g)
{
    size_t count = g->c->counts != NULL ? g->c->counts[0] : g->c->count;

    return net_reduce_alone(g, net_at(SHI_SBUF_RECV, 0),
        net_input_at(g->c->in_place, 0), count * g->es);
}

// reduce_scatter from raw inputs: rank r reduces block r into recvbuf
// (its own input there in place), in pieces where `pieces`.
int
net_rs_raw(net_gen *g, int pieces)
{
    net_blocks b;
    int        st = net_blocks_per_rank(g, &b, g->c->counts);

    if (st != SHOAL_OK) {
        return st;
    }
    if (pieces) {
        net_set_piece(g, b.max);
    }
    net_loc *in = net_tmp(g, (size_t) b.n, sizeof(net_loc));
    for (int c = 0; in != NULL && c < b.n; c++) {
        in[c] = c == g->r && g->c->in_place
            ? net_at(SHI_SBUF_RECV, 0)
            : net_at(SHI_SBUF_SEND, b.off[c] * g->es);
    }
    net_raw x = { .b = &b,
        .base        = net_piece_base(g, &b),
        .in          = in,
        .owner       = net_owner_per_rank(g),
        .out         = net_at(SHI_SBUF_RECV, 0) };
    if (x.base == NULL || x.in == NULL || x.owner == NULL) {
        return SHOAL_ENOMEM;
    }
    return net_raw_run(g, &x);
}
