"""Registers torch.distributed backend "shoal" without importing torch.

``import shoal`` stays cheap and works without torch. Two paths register
the backend, so that ``dist.init_process_group("shoal")`` works whichever
of torch and shoal is imported first, and without ``import shoal`` at all:

- torch loads the entry points of group "torch.backends" at the end of
  ``import torch`` (torch 2.5 and later; torch/__init__.py,
  _import_device_backends), and shoal's package declares ``autoload``
  there (pyproject.toml), which imports torch.distributed and registers;
- ``import shoal`` registers at once if torch.distributed is loaded
  already (torch imported with TORCH_DEVICE_BACKEND_AUTOLOAD=0, or a torch
  older than the entry point group).

Only when both are off (autoloading disabled and shoal imported before
torch.distributed) does the backend need ``import shoal`` after torch.
The process group itself (shoal.c10d, which imports torch) is only
imported when a group is created.
"""

import sys


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


def install():
    """Registers now if torch.distributed is loaded (``import shoal``)."""
    module = sys.modules.get("torch.distributed")
    if module is not None:
        _register(module)


def autoload():
    """The "torch.backends" entry point: runs at the end of ``import
    torch``."""
    import torch.distributed as dist

    _register(dist)
