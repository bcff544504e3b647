"""The launcher and benchmark shipped with the package.

``python -m shoal.run -n 4 prog args`` (or the ``shoalrun`` command)
starts 4 local ranks of prog; ``shoal-perf`` runs the C benchmark and
``shoal-tune`` the tuner (``shoalrun -n 4 shoal-tune``). They are the C
programs installed under shoal/bin.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def tool_path(name):
    """Path of a bundled program ("shoalrun", "shoal-perf", "shoal-tune")."""
    path = os.path.join(_HERE, "bin", name)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"{path} is missing: this shoal was not installed with its tools "
            "(pip install . builds them)")
    return path


def _exec(name, argv):
    path = tool_path(name)
    os.execv(path, [name] + list(argv))


def main(argv=None):
    _exec("shoalrun", sys.argv[1:] if argv is None else argv)


def perf_main(argv=None):
    _exec("shoal-perf", sys.argv[1:] if argv is None else argv)


def tune_main(argv=None):
    _exec("shoal-tune", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
