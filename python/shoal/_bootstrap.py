"""new_comm: creating communicators, from the launch environment or a store.

Without a store, libshoal reads the launcher's variables itself (shoalrun,
torchrun, mpirun, srun: see the README). With a store (a torch.distributed
Store, or anything with set(key, value) and get(key)), rank 0 picks an
address the other ranks can reach (its own address on the route to the
store's server, or loopback for a store without one), a free port there
and a random job secret, and publishes them under a key unique to this
communicator; every rank then creates the communicator with that address
(rank 0 serves libshoal's store there) and proves the secret.
Rank and size then come from the environment, as in torchcomms.
"""

import random
import secrets
import socket
import time

from . import _C, _env
from ._hints import CommHints
from ._options import CommOptions
from .comm import Comm

_BACKENDS = ("shoal",)


def new_comm(backend, device, name=None,
             abort_process_on_timeout_or_error=None, timeout=None,
             store=None, hints=None, options=None):
    """Creates a communicator over every rank of the job (collective).

    backend: "shoal". device: "cpu" or torch.device("cpu"). timeout: the
    default deadline of operations (timedelta or seconds; default
    TORCHCOMM_TIMEOUT_SECONDS, SHOAL_TIMEOUT_SECONDS or 600 s).
    abort_process_on_timeout_or_error: on a timeout, a dead peer or
    mismatched calls, abort the process instead of raising (default
    TORCHCOMM_ABORT_ON_ERROR, else True, as torchcomms). hints: see
    shoal._hints (shoal's keys: shoal::algorithm, shoal::deadline_ms).
    options: a CommOptions carrying any of these; a keyword argument given
    here (not None) overrides its field.
    """
    if options is not None and not isinstance(options, CommOptions):
        raise _C.InvalidArgumentError(
            f"new_comm: options must be a shoal.CommOptions, got "
            f"{type(options).__name__}")
    o = options or CommOptions()
    name = o.name if name is None else name
    timeout = o.timeout if timeout is None else timeout
    store = o.store if store is None else store
    hints = o.hints if hints is None else hints
    if abort_process_on_timeout_or_error is None:
        abort_process_on_timeout_or_error = (
            o.abort_process_on_timeout_or_error)
    if backend not in _BACKENDS:
        raise _C.InvalidArgumentError(
            f"new_comm: backend {backend!r} is not one of {_BACKENDS}")
    device = _check_device(device)
    hints = CommHints(hints, "new_comm")  # checked before anyone waits
    abort = _env.abort_on_error(abort_process_on_timeout_or_error)
    kwargs = dict(timeout_ms=_env.default_timeout_ms(timeout), name=name,
                  abort_on_error=abort)
    if store is not None:
        kwargs.update(_from_store(store, name or "world"))
    c = _C.Comm(**kwargs)
    return Comm(c, name=name or c.name, device=device, backend=backend,
                hints=hints, abort_process_on_timeout_or_error=abort)


def _check_device(device):
    text = "cpu" if device is None else str(device)
    if text.split(":")[0] != "cpu":
        raise _C.InvalidArgumentError(
            f"new_comm: device {text!r}: shoal runs on CPUs only")
    return device if device is not None else "cpu"


def _from_store(store, name):
    rank, size = _env.rank_size()
    if not 0 <= rank < size:
        raise _C.InvalidArgumentError(
            f"new_comm: rank {rank} is outside 0..{size - 1}")
    return store_rendezvous(store, creation_key(store, f"shoal/{name}", size),
                            rank, size)


def creation_key(store, base, size):
    """The store key of this creation of a communicator of `size` ranks
    named by `base`: the store numbers the creations of one name (each rank
    takes a ticket; one creation's ranks hold n * size .. n * size + size -
    1), as libshoal numbers its own, so that the key follows from what
    every member knows and not from what this process did before."""
    add = getattr(store, "add", None)
    if add is None or size == 1:  # a store without counters: one per name
        return base
    return f"{base}/{(add(f'{base}/joins', 1) - 1) // size}"


def store_rendezvous(store, key, rank, size):
    """_C.Comm's rank, size, store and secret arguments, agreed through
    `store` under `key` (unique to one communicator)."""
    args = dict(rank=rank, size=size)
    if size == 1:  # nobody to meet; a secret keeps libshoal from warning
        return dict(args, secret=secrets.token_hex(32))
    if rank == 0:
        ip = _reachable_ip(store)
        host = f"[{ip}]" if ":" in ip else ip
        store.set(key, f"{host}:{free_port(ip)} {secrets.token_hex(32)}")
    value = store.get(key)
    if isinstance(value, bytes):
        value = value.decode()
    address, secret = value.split()
    args.update(store=address, secret=secret)
    return args


def _reachable_ip(store):
    """This host's address for the ranks of other hosts: the one it reaches
    the store's server from, as libshoal's TCP transport finds its own. A
    store that names no server (a FileStore, a HashStore) is taken to be
    one host's: loopback."""
    while getattr(store, "underlying_store", None) is not None:
        store = store.underlying_store  # a PrefixStore's
    host = getattr(store, "host", None)
    if not host:
        return "127.0.0.1"
    port = getattr(store, "port", None) or 1
    try:
        family, _, _, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(addr)  # no packet: only picks the route
            return s.getsockname()[0]
    except OSError as e:
        raise _C.ShoalError(
            f"new_comm: cannot find this host's address on the route to "
            f"the store's server {host}:{port}: {e}") from e


# Ports this process handed out lately, with when: not handed out again
# for a while, since the server meant to bind one may not have yet.
_handed_out = {}
_HOLD_S = 120.0


def free_port(ip, span=1):
    """A port on `ip`, and the span - 1 after it, that nothing uses now,
    for a server to bind next (rank 0's libshoal store; the tests' jobs).
    It is drawn from SHOAL_STORE_PORTS (default 20000-32767, below the
    kernel's ephemeral range, 32768 up: a port the kernel hands to outgoing
    connections could be taken before the server binds it)."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    low, high = _env.store_ports()
    if high - low + 1 < span:
        raise _C.InvalidArgumentError(
            f"SHOAL_STORE_PORTS={low}-{high} holds fewer than {span} ports")
    draw = random.SystemRandom()
    now = time.monotonic()
    for port, when in list(_handed_out.items()):
        if now - when > _HOLD_S:
            del _handed_out[port]
    for _ in range(200):
        port = draw.randint(low, high - span + 1)
        ports = range(port, port + span)
        if any(p in _handed_out for p in ports):
            continue
        if all(_listenable(family, ip, p) for p in ports):
            _handed_out.update((p, now) for p in ports)
            return port
    raise _C.ShoalError(
        f"new_comm: no free port on {ip} in {low}-{high} for the store "
        f"(SHOAL_STORE_PORTS)")


def _listenable(family, ip, port):
    """Whether a server could listen on the port now. Without SO_REUSEADDR
    and with listen(): a port whose listener closed while its connections
    live on, or one only bound, passes a bind with SO_REUSEADDR and then
    fails the server's listen() with EADDRINUSE."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, port))
            s.listen(1)
        except OSError:
            return False
        return True
