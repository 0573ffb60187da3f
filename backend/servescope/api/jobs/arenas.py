"""The server process's malloc arenas, bounded. glibc gives each thread that allocates while the
others hold theirs an arena of its own, up to 8 per core (mallopt(3), M_ARENA_MAX), and an arena
keeps the memory its thread freed for its next owner. Every session simulates ahead on a thread
of its own (api/sessions/track.py), so sessions that come and go spread their runs over ever
more arenas, each holding its own high-water mark: the soak (bench/soak.py) saw the server grow
by 8-16 MB a minute with no Python object left behind. With few arenas the sessions reuse what
the ended ones freed. Elsewhere than glibc this does nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import sys
import tempfile

# Arenas the server's threads share: the main one and one more. The simulating threads hold
# the GIL while they allocate, so they seldom wait on each other's arena lock; with 2 the soak's
# memory slope was flat (bench/soak.py with MALLOC_ARENA_MAX=2, which this sets from inside).
MAX_ARENAS = 2
M_ARENA_MAX = -8  # glibc's malloc.h


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None or not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(name)
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_info") else None


def bound_arenas(limit: int = MAX_ARENAS) -> bool:
    """Let this process's threads share at most `limit` arenas from now on (call it before
    they start); False where malloc is not glibc's."""
    libc = _libc()
    return libc is not None and libc.mallopt(M_ARENA_MAX, limit) == 1


def num_arenas() -> int | None:
    """The arenas this process's malloc holds (glibc's malloc_info: one `<heap>` each); None
    where malloc is not glibc's."""
    libc = _libc()
    if libc is None:
        return None
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        return len(re.findall(r"<heap nr=", out.read().decode()))
