#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz corpora: well-formed messages of each
format, for libFuzzer to mutate from (tests/fuzz/README.md). Seeds already
in the checked-in corpora need not be written again; run this after a
format changes, then `make fuzz` and `tests/fuzz/run.sh --merge`.

    tests/fuzz/seeds.py [CORPUS_DIR]    (default tests/fuzz/corpus)
"""
import os
import struct
import sys

# ---- store wire (store/wire.h): the frame after its u32 length prefix.
SET, GET, ADD, WAIT, WILL, UNWILL, DELETE, REPLY = 1, 2, 3, 4, 5, 6, 7, 0x80


def wbytes(b):
    return struct.pack(">I", len(b)) + b


def frame(cmd, body, ident=7):
    return struct.pack(">BI", cmd, ident) + body


def wire_seeds():
    key, val = b"rank/0/addr", b"10.0.0.1:29500"
    forever = 0xFFFFFFFF
    keys = [b"a", b"rank/1/addr", b"barrier/3"]
    return {
        "set": frame(SET, wbytes(key) + wbytes(val)),
        "set-empty-value": frame(SET, wbytes(key) + wbytes(b"")),
        "get": frame(GET, wbytes(key) + struct.pack(">I", 250)),
        "get-forever": frame(GET, wbytes(key) + struct.pack(">I", forever)),
        "add": frame(ADD, wbytes(b"counter") + struct.pack(">q", -3)),
        "wait": frame(WAIT, struct.pack(">II", 100, len(keys))
                      + b"".join(wbytes(k) for k in keys)),
        "will": frame(WILL, wbytes(b"dead/2") + wbytes(b"rank 2 died")),
        "unwill": frame(UNWILL, wbytes(b"dead/2")),
        "delete": frame(DELETE, wbytes(b"rank/")),
        "reply-get": frame(GET | REPLY, struct.pack(">i", 0) + wbytes(val)),
        "reply-add": frame(ADD | REPLY, struct.pack(">iq", 0, 42)),
        "reply-set": frame(SET | REPLY, struct.pack(">i", 0)),
        "reply-delete": frame(DELETE | REPLY, struct.pack(">iq", 0, 3)),
        "reply-error": frame(WAIT | REPLY, struct.pack(">i", -7)
                             + wbytes(b"timed out waiting for key 'a'")),
    }


# ---- rank TCP frames (transport/tcp/tcp_net.h) and handshake (auth_msg.h)
MAGIC = 0x53484F4C
DATA, P2P, ABORT, BYE = 1, 2, 3, 4
HS_MAGIC = b"shoalHS\x01"


def tcp_frame(typ, seq, length, ident, off, total, call_hash=0):
    return struct.pack("<IHHIIQQQQ", MAGIC, typ, 0, seq, length, ident, off,
                       total, call_hash)


def hs(flag, body):
    return HS_MAGIC + struct.pack(">HBB", 1, flag, 0) + body


def tcp_seeds():
    ns, nc, mac = bytes(range(32)), bytes(range(32, 64)), bytes(32)
    hello_plain, hello_secret = hs(0, ns), hs(1, ns)
    return {
        "frames-data": b"\x00"
        + tcp_frame(DATA, 3, 4096, 0, 0, 8192, 0x1234)
        + tcp_frame(DATA, 3, 4096, 0, 4096, 8192, 0x1234),
        "frames-p2p": b"\x00" + tcp_frame(P2P, 9, 100, 1, 0, 100),
        "frames-control": b"\x00" + tcp_frame(ABORT, 0xFFFFFFF9, 20, 0, 0, 20)
        + tcp_frame(BYE, 0, 0, 0, 0, 0),
        "prefix": b"\x01" + HS_MAGIC,
        "proof-plain": b"\x02\x00" + ns + hs(0, nc + mac),
        "proof-signed": b"\x02\x03" + ns + hs(1, nc + mac),
        "proof-unsigned": b"\x02\x01" + ns + hs(1, nc + mac),
        "proof-version": b"\x02\x00" + ns + HS_MAGIC + b"\x00\x02\x00\x00"
        + nc + mac,
        "client-plain": b"\x03\x00" + hello_plain + hs(0, mac),
        "client-refused": b"\x03\x00" + hello_plain + hs(4, mac),
        "client-secret": b"\x03\x01" + hello_secret + hs(0, mac),
        "client-no-secret": b"\x03\x01" + hello_plain,
    }


# ---- SHOAL_ALGO (coll/select.h)
def algo_seeds():
    specs = [
        "allreduce:oneshot@0-64K,twoshot@64K-1M,direct@1M-;"
        "allgather:staged@0-",
        "allreduce:twoshot@1M-#4-",
        "barrier:flags; broadcast:outbox@-4K#2-8, ring",
        "reduce_scatter:ring@1G-;reducescatter:direct@4096-8192",
        "alltoall:flat#-16;gather:staged;scatter:direct@0-1k",
        "reduce:flat#2-2,ring@1g-2G",
        "ALLREDUCE : HIER @ 32K - ; ; ",
        "allreduce:ring@0-18446744073709551615",
    ]
    return {"spec-%d" % i: s.encode() for i, s in enumerate(specs)}


# ---- compile_op specs (plan/plan_obj.h): blobs of int64s per rank.
SPEC_MAGIC = 0x53504C414E000001
FLOAT32, INT32 = 8, 4
COPY, SUM, MAX = -1, 0, 3


def blob(shape, inputs, outputs, dtype=FLOAT32, red=COPY, error=b""):
    """inputs/outputs: lists of (offsets, sizes)."""
    v = [SPEC_MAGIC, len(shape), dtype, red, len(inputs), len(outputs),
         len(error)] + list(shape)
    for off, size in inputs + outputs:
        v += list(off) + list(size)
    raw = struct.pack("<%dq" % len(v), *v) + error
    raw += b"\0" * (-len(raw) % 8)
    return struct.pack("<H", len(raw) // 8) + raw


SPEC_MAGIC_TENSORS = 0x53504C414E000102


def blob_tensors(tensors, inputs, outputs, dtype=FLOAT32, red=COPY):
    """tensors: (name, ndim, shape or None); inputs/outputs: lists of
    (tensor index, offsets, sizes)."""
    v = [SPEC_MAGIC_TENSORS, dtype, red, len(tensors), len(inputs),
         len(outputs)]
    raw = b""
    for name, ndim, shape in tensors:
        head = [ndim, shape is not None, len(name)] + list(shape or ())
        raw += struct.pack("<%dq" % len(head), *head)
        raw += name + b"\0" * (-len(name) % 8)
    for k, off, size in inputs + outputs:
        box = [k] + list(off) + list(size)
        raw += struct.pack("<%dq" % len(box), *box)
    raw = struct.pack("<%dq" % len(v), *v) + raw
    return struct.pack("<H", len(raw) // 8) + raw


def plan_input(rank, blobs):
    n = len(blobs)
    return bytes([(n - 1) | (rank << 2)]) + b"".join(blobs)


def plan_seeds():
    s = (4, 6)
    row = [blob(s, [((2 * r, 0), (2, 6))], [((0, 3 * r), (4, 3))])
           for r in range(2)]
    overlap = [blob(s, [((0, 0), (4, 6))], [((0, 0), (4, 6))], red=SUM)
               for _ in range(2)]
    cube = (4, 4, 4)
    quad = [blob(cube, [((r, 0, 0), (1, 4, 4))], [((0, 0, r), (4, 4, 1))],
                 dtype=INT32, red=MAX) for r in range(4)]
    return {
        "one-rank": plan_input(0, [blob(s, [((0, 0), s)], [((0, 0), s)])]),
        "shard0-to-shard1": plan_input(1, row),
        "sum-overlap": plan_input(0, overlap),
        "four-ranks-3d": plan_input(2, quad),
        "scalar": plan_input(0, [blob((), [((), ())], [((), ())])]),
        # An output no input covers: the planner's path for uncovered
        # elements, with no contributor anywhere.
        "output-without-inputs": plan_input(
            0, [blob((8,), [], [((0,), (8,))])]),
        "rank-error": plan_input(1, [blob(s, [], []),
                                     blob((), [], [], error=b"bad spec")]),
        "shape-mismatch": plan_input(0, [blob(s, [], []),
                                         blob((4, 7), [], [])]),
        # Several tensors: a weight and a bias gathered from two ranks
        # that name them in other orders, the bias's extent from its boxes.
        "tensors-gather": plan_input(0, [
            blob_tensors([(b"weight", 2, (4, 6)), (b"bias", 1, None)],
                         [(0, (0, 0), (2, 6)), (1, (0,), (3,))],
                         [(0, (0, 0), (4, 6)), (1, (0,), (6,))]),
            blob_tensors([(b"bias", 1, None), (b"weight", 2, None)],
                         [(0, (3,), (3,)), (1, (2, 0), (2, 6))], [])]),
        "tensors-sum-0d": plan_input(1, [
            blob_tensors([(b"s", 0, ()), (b"v", 1, (5,))],
                         [(0, (), ()), (1, (0,), (5,))],
                         [(0, (), ())], red=SUM)] * 2),
        "tensors-beside-one": plan_input(0, [
            blob((4,), [((0,), (4,))], []),
            blob_tensors([(b"x", 1, (4,))], [], [(0, (0,), (4,))])]),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus"
    for name, seeds in (("wire", wire_seeds()), ("tcp", tcp_seeds()),
                        ("algo", algo_seeds()), ("plan", plan_seeds())):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for seed, data in seeds.items():
            with open(os.path.join(out, name, "seed-" + seed), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
