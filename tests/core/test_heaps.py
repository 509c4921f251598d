"""The C heap does not grow with the number of threads (glibc): 16 threads allocating at once
share a few heaps (minicrawl.heaps.HEAPS) once a crawler — the core's or run.py's — has run,
against one each without. Counted from outside the test process, by glibc's own report
(malloc_info)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

PROBE = r"""
import ctypes, sys, tempfile, threading
SETUP
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
start = threading.Barrier(16)
def work():
    start.wait()  # all at once: they contend for the heap
    for _ in range(2000):
        blocks = [libc.malloc(4096) for _ in range(8)]
        for block in blocks:
            libc.free(block)
threads = [threading.Thread(target=work) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.NamedTemporaryFile("r") as report:
    out = libc.fopen(report.name.encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    print(report.read().count("<heap nr="))
"""

SETUPS = {  # a seed on a closed port: each crawl ends at once (run.py's runs the core's)
    "core": "from minicrawl.core.crawler import Crawler\n"
            "Crawler(['http://127.0.0.1:9/'], threads=1).run()",
    "run.py": "from minicrawl import Crawler\n"
              "Crawler(['http://127.0.0.1:9/'], threads=1, retries=0).run()",
}


def heaps(setup: str) -> int:
    """Heaps glibc reports after 16 threads allocated at once, ``setup`` run first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", PROBE.replace("SETUP", setup)], env=env,
                         capture_output=True, text=True, timeout=60, check=True)
    return int(out.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's heaps only")
def test_sixteen_threads_share_a_few_heaps_once_a_crawler_has_run() -> None:
    from minicrawl.heaps import HEAPS

    assert heaps("") > HEAPS  # without: a heap per contending thread, up to 8 per core
    assert heaps(SETUPS["core"]) <= HEAPS
    assert heaps(SETUPS["run.py"]) <= HEAPS
