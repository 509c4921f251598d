"""The end of a ``--mirror`` crawl alone (issue 47): ``Mirror.rewrite_links`` on the CPython docs
as ``bench/mirror.py --keep`` left them, timed, its output checked byte for byte.

    python bench/mirror.py --reps 1 --keep        # prints "kept: /tmp/minicrawl-mirror-…"
    python bench/mirror_rewrite.py /tmp/minicrawl-mirror-… [--reps 5]

Each rep lays the site's original files out as the kept mirror's table names them (in a temp
dir), reads the table as a crawl into that folder would, and rewrites every HTML page and
stylesheet; the CPU and wall of ``rewrite_links`` (reads and writes included) are printed, and
the files it wrote are compared with the kept mirror's: the same bytes, or the paths that differ.
Run it from each checkout's root to compare two.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minicrawl.html.encoding import sniff  # noqa: E402
from minicrawl.mirror.saver import MANIFEST, Mirror, Saved  # noqa: E402


def lay_out(kept: Path, into: Path) -> list[Saved]:
    """The site's files under ``into`` at the kept mirror's paths; the pages and stylesheets."""
    mirror = kept / "minicrawl-0"
    into.mkdir(parents=True)
    shutil.copy(mirror / MANIFEST, into / MANIFEST)
    saved = []
    for line in (mirror / MANIFEST).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("alias"):
            continue
        body = (kept / "site" / (unquote(urlsplit(entry["url"]).path).lstrip("/")
                                 or "index.html")).read_bytes()
        (into / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
        (into / entry["path"]).write_bytes(body)
        kind = {"text/html": "html", "text/css": "css"}.get(entry["type"], "")
        if kind:
            encoding = sniff(body, entry["type"])[0] if kind == "html" else "utf-8"
            saved.append(Saved(entry["url"], entry["path"], kind, encoding))
    return saved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("kept", type=Path, help="a folder bench/mirror.py --keep left")
    ap.add_argument("--reps", type=int, default=3)
    opts = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="minicrawl-rewrite-"))
    try:
        for rep in range(opts.reps):
            into = work / str(rep)
            saved = lay_out(opts.kept, into)
            mirror = Mirror(into)
            mirror._saved = saved  # (what the crawl's saves would have listed)
            wall, cpu = time.perf_counter(), time.process_time()
            changed = mirror.rewrite_links()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            differ = [s.path for s in saved if (into / s.path).read_bytes()
                      != (opts.kept / "minicrawl-0" / s.path).read_bytes()]
            print(f"rep {rep + 1}: {changed} of {len(saved)} files rewritten, wall {wall:.2f} s, "
                  f"CPU {cpu:.2f} s; {len(differ)} differ from the kept mirror {differ[:5]}",
                  flush=True)
            shutil.rmtree(into)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
