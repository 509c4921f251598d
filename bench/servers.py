"""nginx on loopback with a private config, its access log, and the latency proxy.

Shared by ``run.py``, ``profile_crawl.py`` and the real-site benches (``javadoc.py``,
``linkcheck.py``, ``mirror.py``: the CPython docs they serve are installed here). nginx is Debian's
(installed with apt-get if missing), started in the foreground (``daemon off``) as our child so we
can stop it by pid, with every path it writes inside our temp dir; its access log has one line per
request (``$request_uri $status $body_bytes_sent``), unbuffered, so the bytes appended during one
crawl are exactly that crawl's requests.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
# The types nginx names (anything else: application/octet-stream): enough for the generated
# sites; a real site's stylesheets, scripts and images need theirs (``WEB_TYPES``).
HTML_TYPES = "text/html html; text/plain txt; application/json json;"
WEB_TYPES = (HTML_TYPES + " text/css css; application/javascript js; image/png png; "
             "image/svg+xml svg; image/jpeg jpg jpeg; image/gif gif; image/x-icon ico; "
             "application/xml xml;")

NGINX_CONF = """\
daemon off;
master_process on;
worker_processes {workers};
{user}
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    types {{ {types} }}
    default_type application/octet-stream;
    # $msec (when the response was sent) and $request_time (how long it took) give when each
    # request arrived: the pace a crawler keeps, as the server sees it (javadoc.py's gaps).
    log_format bench '$request_uri $status $body_bytes_sent $msec $request_time';
    access_log {tmp}/access.log bench;
    # The fast static-file path: sendfile, and long keep-alive so connection setup never counts.
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    # Relative Location headers: a redirect must point at the port the crawler used (the proxy's
    # when there is one), not nginx's own.
    absolute_redirect off;
    server_tokens off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {root};
        index index.html;
        autoindex off;
    }}
}}
"""


def ensure_tool(binary: str, package: str) -> str:
    """Path of ``binary``; apt-get install ``package`` first if it is missing (we are root)."""
    found = shutil.which(binary) or (f"/usr/sbin/{binary}"
                                     if os.path.exists(f"/usr/sbin/{binary}") else None)
    if found:
        return found
    apt_install(package, f"{binary} is missing")
    found = shutil.which(binary) or f"/usr/sbin/{binary}"
    if not os.path.exists(found):
        sys.exit(f"{package} installed but {binary} not found")
    return found


def apt_install(package: str, why: str) -> None:
    """Install a Debian package (we must be root; else exit saying ``why`` and how)."""
    if os.geteuid() != 0:
        sys.exit(f"{why}: apt-get install -y {package} (as root)")
    print(f"installing {package} with apt-get ...", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=False)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


# The CPython docs as Debian ships them (the Python 3.11 docs): served by linkcheck.py, mirror.py
# and javadoc.py --site cpython.
PYTHON_DOCS_PACKAGE = "python3-doc"
PYTHON_DOCS_ROOT = Path("/usr/share/doc/python3-doc/html")


def ensure_python_docs() -> Path:
    """The CPython docs as Debian ships them (``PYTHON_DOCS_ROOT``), installed first if missing."""
    if not (PYTHON_DOCS_ROOT / "index.html").exists():
        apt_install(PYTHON_DOCS_PACKAGE, f"{PYTHON_DOCS_ROOT} is missing")
    return PYTHON_DOCS_ROOT


def python_docs_version() -> str:
    """The Debian packages of the CPython docs and their versions, for the tables' headings."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}; ",
                          PYTHON_DOCS_PACKAGE, "python3.11-doc"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip().rstrip(";") or "?"


def niced(cmd: list[str]) -> list[str]:
    """``cmd`` at a higher scheduling priority when we are root: the machine may be shared with
    busy test runs, and the server and the proxy stand for the network, which must not wait for
    a CPU. They use little of it (see the "server CPU s" column), so this costs others little."""
    if os.geteuid() == 0 and shutil.which("nice"):
        return ["nice", "-n", "-10", *cmd]
    return cmd


def stop_process(proc: subprocess.Popen | None, sig: int) -> None:
    """Send ``sig`` to a child still running, give it 5 s, then kill it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    """A port free on 127.0.0.1 now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def proc_cpu(pid: int) -> float:
    """User+system CPU seconds of a live process (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (nginx's workers)."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


class Nginx:
    """nginx serving ``root`` on 127.0.0.1:``port`` with its config and logs under ``tmp``."""

    def __init__(self, tmp: Path, root: Path, port: int, workers: int = 1,
                 types: str = HTML_TYPES) -> None:
        self.binary = ensure_tool("nginx", "nginx")
        self.tmp = tmp
        self.root = root
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self.log = tmp / "access.log"
        conf = NGINX_CONF.format(
            workers=workers, tmp=tmp, port=port, root=root, types=types,
            # As root, nginx's workers default to user nobody, who cannot read our 0700 temp
            # dir; keep them as root (it only serves loopback).
            user="user root;" if os.geteuid() == 0 else "")
        self.conf = tmp / "nginx.conf"
        self.conf.write_text(conf)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Nginx:
        self.log.touch()
        self.proc = subprocess.Popen(
            niced([self.binary, "-c", str(self.conf), "-p", str(self.tmp), "-e",
                   str(self.tmp / "nginx-error.log")]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / "nginx-stderr.log", "wb"))  # noqa: SIM115 - lives with nginx
        try:
            wait_listening(self.port)
        except OSError:
            self.stop()
            err = (self.tmp / "nginx-stderr.log").read_text() + (
                self.tmp / "nginx-error.log").read_text()
            sys.exit(f"nginx did not start:\n{err}")
        return self

    def cpu(self) -> float:
        """CPU seconds of nginx's master and workers so far."""
        if self.proc is None:
            return 0.0
        return proc_cpu(self.proc.pid) + sum(proc_cpu(k) for k in children_of(self.proc.pid))

    def log_size(self) -> int:
        return self.log.stat().st_size

    def requests_since(self, offset: int) -> list[tuple[str, int]]:
        """(path, status) of every request logged after byte ``offset``.

        nginx logs a request after its response is sent, so a crawler can exit a moment before
        its last line is written: wait until the log stops growing for 100 ms.
        """
        size, stable_since = self.log_size(), time.monotonic()
        while time.monotonic() - stable_since < 0.1:
            time.sleep(0.02)
            now = self.log_size()
            if now != size:
                size, stable_since = now, time.monotonic()
        with open(self.log, "rb") as f:
            f.seek(offset)
            data = f.read(size - offset)
        out = []
        for line in data.decode("utf-8", "replace").splitlines():
            uri, status, _ = (line.split(" ") + ["", ""])[:3]
            out.append((normalize(uri), int(status) if status.isdigit() else 0))
        return out

    def spans_since(self, offset: int) -> list[tuple[float, float]]:
        """(arrived, answered) of every request logged after byte ``offset``, in seconds since
        the epoch, sorted by arrival (nginx's ``$msec`` less ``$request_time``; ms resolution).
        Call after ``requests_since``, which waits for the log to settle."""
        with open(self.log, "rb") as f:
            f.seek(offset)
            data = f.read()
        spans = []
        for line in data.decode("utf-8", "replace").splitlines():
            fields = line.split(" ")
            if len(fields) >= 5:
                done, took = float(fields[3]), float(fields[4])
                spans.append((done - took, done))
        return sorted(spans)

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGQUIT)  # graceful: workers finish, then exit
        self.proc = None

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def normalize(uri: str) -> str:
    """A logged request URI as a path to compare with the expected set: percent-escapes decoded
    (crawlers escape differently; the site's paths need no escaping), query kept."""
    return unquote(uri)


def count_fetches(requests: list[tuple[str, int]]) -> Counter[str]:
    return Counter(path for path, _ in requests)


class LatencyProxy:
    """``latency_proxy.py`` as a child process in front of nginx."""

    def __init__(self, port: int, upstream_port: int, delay_ms: float) -> None:
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self.cmd = [sys.executable, str(HERE / "latency_proxy.py"), "--listen",
                    f"127.0.0.1:{port}", "--upstream", f"127.0.0.1:{upstream_port}",
                    "--delay-ms", str(delay_ms)]
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> LatencyProxy:
        self.proc = subprocess.Popen(niced(self.cmd), stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            sys.exit(f"latency proxy did not start: {line!r}")
        return self

    def cpu(self) -> float:
        return proc_cpu(self.proc.pid) if self.proc is not None else 0.0

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGTERM)
        self.proc = None
