"""The C heaps a crawl's threads leave behind, kept few (the core's crawler calls this once)."""

import ctypes
import os
import platform


def keep_heaps_small() -> None:
    """glibc gives each thread that contends for the C heap its own (up to 8 per core), and after
    a big block is freed serves big bodies from those heaps, which keep their high-water mark
    (Java docs, 16 workers: 112 vs 78 MB). Blocks over 256 KB are mapped, never kept; all threads
    share two heaps (run.py: 75 → 68 MB). Process-wide; each unless the user set glibc's own."""
    if platform.libc_ver()[0] == "glibc":
        for name, option, value in (("ARENA_MAX", -8, 2), ("MMAP_THRESHOLD_", -3, 256 * 1024)):
            if "MALLOC_" + name not in os.environ:  # option: M_..., from <malloc.h>
                ctypes.CDLL(None).mallopt(option, value)
