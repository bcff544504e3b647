"""Sharding specs: JAX's PartitionSpec (P) and ShardingSpec, which adds the
mesh and the axes over which a tensor holds partial values."""

from .. import _C

PARTIAL_OPS = ("sum", "avg", "max", "min")


class P(tuple):
    """One entry per tensor dimension: None (replicated), an axis name, or
    a tuple of axis names (the first major). Trailing dimensions and
    unused axes are replicated."""

    def __new__(cls, *entries):
        norm = []
        for e in entries:
            if e is None:
                norm.append(())
            elif isinstance(e, str):
                norm.append((e,))
            elif isinstance(e, (tuple, list)) and all(
                    isinstance(a, str) for a in e):
                norm.append(tuple(e))
            else:
                raise _C.InvalidArgumentError(
                    f"P: an entry is None, an axis name or a tuple of "
                    f"names, not {e!r}")
        return super().__new__(cls, norm)

    def __repr__(self):
        def one(axes):
            if not axes:
                return "None"
            return repr(axes[0]) if len(axes) == 1 else repr(axes)
        return f"P({', '.join(one(a) for a in self)})"

    def dim_axes(self, dim):
        """The axes sharding dimension `dim` (() past the entries)."""
        return self[dim] if dim < len(self) else ()


class ShardingSpec:
    """Where a tensor's pieces live on `mesh`: `spec` (a P) shards
    dimensions; `partial` names axes over which ranks hold partial values
    whose `partial_op` ("sum", "avg", "max", "min") is the real one."""

    def __init__(self, mesh, spec=P(), partial=frozenset(),
                 partial_op="sum"):
        self.mesh = mesh
        self.spec = spec if isinstance(spec, P) else P(*spec)
        self.partial = frozenset(partial)
        self.partial_op = partial_op
        used = [a for axes in self.spec for a in axes]
        for a in used + sorted(self.partial):
            mesh.axis(a)  # names the mesh's axes when unknown
        if len(set(used)) != len(used):
            twice = sorted({a for a in used if used.count(a) > 1})
            raise _C.InvalidArgumentError(
                f"{self.spec!r}: axis {twice[0]!r} is used twice (an axis "
                "shards at most one dimension, once)")
        both = self.partial & set(used)
        if both:
            raise _C.InvalidArgumentError(
                f"axis {sorted(both)[0]!r} both shards a dimension and holds "
                "partial values")
        if partial_op not in PARTIAL_OPS:
            raise _C.InvalidArgumentError(
                f"partial_op {partial_op!r} is not one of {PARTIAL_OPS}")

    def __eq__(self, other):
        return (isinstance(other, ShardingSpec) and self.mesh is other.mesh
                and self.norm() == other.norm()
                and self.partial == other.partial
                and (not self.partial or self.partial_op == other.partial_op))

    def __hash__(self):
        return hash((id(self.mesh), self.norm(), self.partial))

    def __repr__(self):
        extra = (f", partial={sorted(self.partial)}, "
                 f"partial_op={self.partial_op!r}" if self.partial else "")
        return f"ShardingSpec({self.mesh!r}, {self.spec!r}{extra})"

    def norm(self):
        """The entries without trailing replicated ones."""
        entries = list(self.spec)
        while entries and not entries[-1]:
            entries.pop()
        return tuple(entries)

    def dim_axes(self, dim):
        return self.spec.dim_axes(dim)

    def dim_of(self, axis):
        """The dimension `axis` shards, or None."""
        for d, axes in enumerate(self.spec):
            if axis in axes:
                return d
        return None

    def check_rank(self, ndim):
        if len(self.spec) > ndim:
            raise _C.InvalidArgumentError(
                f"{self.spec!r} has {len(self.spec)} entries for a tensor "
                f"of {ndim} dimensions")

    def with_dims(self, dims, partial=None, partial_op=None):
        """A spec on the same mesh with dimension entries `dims`."""
        return ShardingSpec(
            self.mesh, P(*dims),
            self.partial if partial is None else partial,
            self.partial_op if partial_op is None else partial_op)
