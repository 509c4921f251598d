"""The C heaps a crawl's threads leave behind, kept few (the core's crawler calls this once)."""

import ctypes
import os
import platform

# The heaps all threads share. Two made every worker that allocated while holding the GIL wait
# for the one parsing beside it, half the time: libxml2 builds a tree in its thread's heap, under
# that heap's lock (the Java API docs ×16: 4 heaps 0.963 of the wall of 2, 18 heaps 0.977, 8
# the same as 4, 6 pairs each; peak RSS 80 MB all).
HEAPS = 4


def keep_heaps_small() -> None:
    """glibc gives each thread that contends for the C heap its own (up to 8 per core), and after
    a big block is freed serves big bodies from those heaps, which keep their high-water mark
    (Java docs, 16 workers: 112 vs 78 MB). Blocks over 256 KB are mapped, never kept; all threads
    share ``HEAPS`` heaps. Process-wide; each unless the user set glibc's own."""
    if platform.libc_ver()[0] == "glibc":
        for name, option, value in (("ARENA_MAX", -8, HEAPS),
                                    ("MMAP_THRESHOLD_", -3, 256 * 1024)):
            if "MALLOC_" + name not in os.environ:  # option: M_..., from <malloc.h>
                ctypes.CDLL(None).mallopt(option, value)
