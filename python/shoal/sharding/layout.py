"""Which piece of a tensor each rank holds. A dimension sharded by axes
(a1, a2, ...) is split as DTensor splits it: torch.chunk into size(a1)
pieces, each of those into size(a2), and so on; with uneven sizes the
first pieces are the larger ones (and the last may be empty)."""


def chunk(length, parts, i):
    """(offset, length) of piece i of `length` split into `parts` as
    torch.chunk splits it."""
    c = -(-length // parts) if length else 0
    off = min(i * c, length)
    return off, max(0, min(c, length - off))


def piece(length, sizes, idxs):
    """(offset, length) along one dimension of the piece at indices `idxs`
    along axes of `sizes` (nested chunking, first axis major)."""
    off = 0
    for s, i in zip(sizes, idxs):
        sub, length = chunk(length, s, i)
        off += sub
    return off, length


def dim_piece(spec, shape, dim, coords):
    """(offset, length) of dimension `dim` on the rank at `coords`."""
    mesh = spec.mesh
    axes = spec.dim_axes(dim)
    return piece(shape[dim], [mesh.size(a) for a in axes],
                 [coords[mesh.axis(a)] for a in axes])


def local_slices(spec, shape, coords=None):
    """The slices of the global tensor the rank at `coords` (default:
    this rank) holds."""
    coords = spec.mesh.coords if coords is None else coords
    out = []
    for d in range(len(shape)):
        off, n = dim_piece(spec, shape, d, coords)
        out.append(slice(off, off + n))
    return tuple(out)


def local_shape(spec, shape, coords=None):
    return tuple(s.stop - s.start for s in local_slices(spec, shape, coords))


def is_even(spec, shape, dim):
    """Whether every rank holds the same length of `dim`."""
    mesh = spec.mesh
    axes = spec.dim_axes(dim)
    sizes = [mesh.size(a) for a in axes]
    k = 1
    for s in sizes:
        k *= s
    lengths = set()
    for i in range(k):
        idxs, j = [], i
        for s in reversed(sizes):
            idxs.append(j % s)
            j //= s
        lengths.add(piece(shape[dim], sizes, list(reversed(idxs)))[1])
    return len(lengths) <= 1
