"""Registers torch.distributed backend "shoal" without importing torch.

``import shoal`` must stay cheap and work without torch, yet
``dist.init_process_group("shoal")`` must work whether torch or shoal was
imported first. So: if torch.distributed is already loaded, register now;
otherwise watch for it (a meta path finder that wraps its loader) and
register right after it has loaded. The process group itself (shoal.c10d,
which imports torch) is only imported when a group is created.
"""

import sys

_TARGET = "torch.distributed"


def _create(opts, backend_options):
    from .c10d import create_process_group

    return create_process_group(opts, backend_options)


def _register(dist):
    backend = getattr(dist, "Backend", None)
    if backend is None:  # a torch built without distributed support
        return
    if "SHOAL" not in getattr(backend, "_plugins", {}):
        backend.register_backend("shoal", _create, extended_api=True,
                                 devices=["cpu"])


class _Loader:
    """Runs torch.distributed's own loader, then registers."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _register(module)

    def __getattr__(self, name):  # everything else is the real loader's
        return getattr(self._loader, name)


class _Finder:
    """Finds nothing itself: wraps the loader others find for
    torch.distributed, once."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(cls)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install():
    module = sys.modules.get(_TARGET)
    if module is not None:
        _register(module)
    elif _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)
