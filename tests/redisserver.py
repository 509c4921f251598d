"""Real ``redis-server`` processes on loopback, for the tests and the benchmark of the shared crawl.

:class:`RedisServer` starts one server on 127.0.0.1 and a free port, without persistence
(``--save "" --appendonly no``, a private temporary directory), and stops it. :class:`RedisCluster`
starts three ``--cluster-enabled yes`` servers and joins them with ``redis-cli --cluster create``,
so the cluster code paths run against a real cluster, slots and redirections included.

Like :mod:`minicrawl.demo.site`, this is what lets everything run without any outside service.
Not part of the package: the tests import it as ``redisserver`` (``tests/`` is on their path, as
for ``rawserver``), ``bench/bench_redis.py`` as ``tests.redisserver``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

MISSING = ("redis-server (and redis-cli) not found on PATH: the shared-crawl tests and benchmark "
           "start real Redis servers. Install Debian's package: apt-get install redis-server")


def require_binaries() -> tuple[str, str]:
    """Paths of redis-server and redis-cli; RuntimeError with an install hint if missing."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if not server or not cli:
        raise RuntimeError(MISSING)
    return server, cli


def free_port(cluster: bool = False) -> int:
    """A free loopback port; for a cluster node also port + 10000 (its bus port) must be free."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not cluster:
            return port
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    continue
    raise RuntimeError("no free loopback port found")


class RedisServer:
    """One ``redis-server`` on 127.0.0.1, no persistence. Context manager, or start()/stop().

    With ``tls`` (the server's certificate and key files, PEM) it speaks TLS only, on ``port``
    (``--tls-port``; clients are not asked for certificates)."""

    def __init__(self, port: int | None = None, cluster: bool = False,
                 extra: tuple[str, ...] = (), password: str | None = None,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.cluster = cluster
        self.password = password  # --requirepass: the URL and client() carry it
        self.tls = tls
        self.port = port or free_port(cluster)
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        """The URL to give ``--redis``: ``redis://127.0.0.1:PORT/0`` (``redis://:PASSWORD@…``
        with a password, ``rediss://`` with TLS)."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis{'s' if self.tls else ''}://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING, ``timeout`` seconds at most;
        returns self. RuntimeError (its log quoted) if it exits first or stays silent."""
        server, _ = require_binaries()
        self._dir = tempfile.TemporaryDirectory(prefix="minicrawl-redis-")
        ports = ["--port", str(self.port)] if self.tls is None else [
            "--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.tls[0]),
            "--tls-key-file", str(self.tls[1]), "--tls-auth-clients", "no"]
        args = [server, *ports, "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self._dir.name, "--loglevel", "warning",
                "--logfile", str(Path(self._dir.name) / "redis.log")]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file",
                     f"nodes-{self.port}.conf", "--cluster-node-timeout", "3000"]
        if self.password:
            args += ["--requirepass", self.password]
        args += list(self.extra)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        client = self.client(socket_timeout=1)
        try:
            while True:
                if self.proc.poll() is not None:
                    err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr \
                        else ""
                    raise RuntimeError(f"redis-server on port {self.port} exited: {err}"
                                       f"{self.log()}")
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server on port {self.port} did not answer "
                                           f"within {timeout}s: {self.log()}") from None
                    time.sleep(0.02)
        finally:
            client.close()

    def log(self) -> str:
        """The server's log file (for error messages)."""
        if self._dir is None:
            return ""
        path = Path(self._dir.name) / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def client(self, **settings: float) -> redis.Redis:
        """A new client of this server (str replies, its password; with TLS, its certificate
        unchecked: the server is our own), given redis-py's ``settings``; the caller closes
        it."""
        tls = {"ssl": True, "ssl_cert_reqs": "none"} if self.tls else {}
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True,
                           password=self.password, **tls, **settings)

    def stop(self) -> None:
        """Stop the server (SIGTERM; SIGKILL after 5 s) and delete its directory.
        Safe to call twice."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RedisCluster:
    """A 3-node Redis Cluster (no replicas) on loopback, built with ``redis-cli --cluster``."""

    def __init__(self, nodes: int = 3) -> None:
        self.nodes = [RedisServer(cluster=True) for _ in range(nodes)]

    @property
    def url(self) -> str:
        """A URL the crawler reads as "cluster" (any node will do as the entry point)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout: float = 30.0) -> RedisCluster:
        """Start the nodes, join them (``redis-cli --cluster create``) and wait until each says
        ok, ``timeout`` seconds per step; returns self. On a failure every node is stopped."""
        _, cli = require_binaries()
        try:
            for node in self.nodes:
                node.start()
            addrs = [f"127.0.0.1:{n.port}" for n in self.nodes]
            done = subprocess.run([cli, "--cluster", "create", *addrs, "--cluster-replicas", "0",
                                   "--cluster-yes"], capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout}"
                                   f"{done.stderr}")
            self._wait_ok(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ok(self, timeout: float) -> None:
        # Every node must agree the cluster is up (all 16384 slots covered) before clients use it.
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            client = node.client()
            try:
                while client.cluster("info").get("cluster_state") != "ok":
                    if time.monotonic() > deadline:
                        raise RuntimeError("the local Redis Cluster did not reach state ok")
                    time.sleep(0.05)
            finally:
                client.close()

    def stop(self) -> None:
        """Stop every node and delete their directories; safe to call twice."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
