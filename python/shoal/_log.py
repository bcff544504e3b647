"""Log lines of the Python layer, beside libshoal's.

libshoal prints to stderr when SHOAL_DEBUG asks for the level; the Python
layer does the same (in its format), and also hands every line to the
standard "shoal" logger.
"""

import logging
import os
import socket
import sys

_logger = logging.getLogger("shoal")
_LEVELS = {"WARN": 1, "INFO": 2, "TRACE": 3}


def _shown(level):
    asked = os.environ.get("SHOAL_DEBUG", "WARN").strip().upper()
    return _LEVELS.get(asked, 1) >= _LEVELS[level]


def info(text):
    _logger.info(text)
    if _shown("INFO"):
        print(f"{socket.gethostname()}:{os.getpid()} shoal INFO {text}",
              file=sys.stderr, flush=True)
