"""Servers the harness starts: on 127.0.0.1, a free port, a readiness probe, a log in the run
folder, and stopped by their PID at the end, on Ctrl-C, or when the run is killed.

Each server runs under a guard (:mod:`harness.measure.serving.guard`) in its own process
group; the guard stops the whole group when asked, when the harness dies, or when the
server dies. :class:`ServerProcess` holds one such server and can start it again after a
crash; :func:`server_log_line` finds the error a server logged while it failed a request.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harness.measure.serving.openai_client import TRANSPORT_ERRORS, http_get

__all__ = ["ServerNotReady", "ServerProcess", "ServerUnavailable", "free_port",
           "server_log_line"]

#: Address every server the harness starts listens on.
HOST = "127.0.0.1"


class ServerUnavailable(RuntimeError):
    """No server to send a row's requests to (one line saying why and what to do)."""


class ServerNotReady(ServerUnavailable):
    """A server that exited or did not answer within its limit (one line naming its log)."""


def free_port(host: str = HOST) -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


#: What a readiness probe may raise while the server is starting: no connection yet, a
#: broken answer, a ``/v1/models`` body that is not JSON yet.
_PROBE_ERRORS: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, json.JSONDecodeError)

#: Patterns of a server log's error lines, most telling first: an engine's assertion, a
#: Python exception's message line, then any line saying error.
_ERROR_LINES = (re.compile(r"Check failed|Assertion .* failed|panicked at"),
                re.compile(r"^\s*(\w+\.)*\w*(Error|Exception)\b\s*:"),
                re.compile(r"\b(ERROR|FATAL|Error|error)\b"))


def server_log_line(path: Path, span: tuple[int | None, int | None] | None,
                    grace_s: float = 0.2) -> str | None:
    """The first error line (:data:`_ERROR_LINES`) the server wrote to its log from the
    moment a request was sent (``span[0]``: the log's size then, bytes) until now, up to 300
    characters; None when it wrote none. A server may log a failure just after it answers:
    when nothing is there yet, the log is read once more ``grace_s`` seconds later."""
    if not span or span[0] is None:
        return None
    for attempt in range(2):
        if attempt:
            time.sleep(grace_s)
        try:
            with open(path, "rb") as f:
                f.seek(span[0])
                window = f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return None
        lines = [ln.strip() for ln in window.splitlines() if ln.strip()]
        for pattern in _ERROR_LINES:
            for ln in lines:
                if pattern.search(ln):
                    return ln[:300]
    return None


class ServerProcess:
    """One server: ``command(port) -> (argv, extra env)`` builds its command line.

    Parameters
    ----------
    command:
        Called with the port each time the server starts.
    log_path:
        Where the server's stdout and stderr go (appended; each start writes a header).
    ready_timeout_s:
        How long a start may take until ``/health`` and ``/v1/models`` answer 200, seconds.
    """

    def __init__(self, command: Callable[[int], tuple[list[str], dict[str, str]]],
                 log_path: Path, ready_timeout_s: float = 300.0, label: str = "server") -> None:
        self.command = command
        self.log_path = Path(log_path)
        self.ready_timeout_s = float(ready_timeout_s)
        self.label = label
        self.port: int | None = None
        self.guard: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None  # the server's own PID (its process group's id)
        self.starts = 0
        self.ready_s: float | None = None
        self._t0 = 0.0  # when the last spawn began (monotonic s)
        self.model: str | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        """Start the server and wait until it is ready (:meth:`spawn`, then
        :meth:`wait_ready`).

        Raises
        ------
        ServerNotReady
            When it exits first or is not ready within ``ready_timeout_s`` (it is stopped);
            the message names its log."""
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """Start the server's process on a free port and return at once: several servers
        then start side by side. Call it from a thread that outlives the server (the
        process is tied to the thread that spawns it, which ends it on exit)."""
        self.port = free_port()
        argv, extra_env = self.command(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== harness: starting {self.label} on {HOST}:{self.port} at "
                      f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(argv)}\n".encode())
        env = {**os.environ, **extra_env}
        t0 = time.monotonic()
        self.guard = guard = subprocess.Popen(
            [sys.executable, "-m", "harness.measure.serving.guard", str(self.log_path), "--",
             *argv], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
            preexec_fn=_die_with_parent)
        assert guard.stdout is not None  # stdout=PIPE
        line = guard.stdout.readline().strip()
        self.pid = int(line) if line.isdigit() else None
        self.starts += 1
        self._t0 = t0

    def wait_ready(self) -> None:
        """Wait until the spawned server answers ``/health`` and ``/v1/models``.

        Raises
        ------
        ServerNotReady
            As :meth:`start`."""
        t0 = self._t0
        deadline = t0 + self.ready_timeout_s
        guard, port = self.guard, self.port
        if guard is None or port is None:
            raise ServerNotReady(f"{self.label} was not started; its log: {self.log_path}")
        while True:
            if guard.poll() is not None:
                code = guard.returncode
                self.guard = None
                raise ServerNotReady(f"{self.label} exited with status {code} before it was "
                                     f"ready; its log: {self.log_path}")
            try:
                status, body = http_get(HOST, port, "/health", timeout=2.0)
                if status == 200:
                    status, body = http_get(HOST, port, "/v1/models", timeout=2.0)
                    if status == 200:
                        data = json.loads(body).get("data") or []
                        self.model = data[0].get("id") if data else None
                        break
            except _PROBE_ERRORS:
                pass
            if time.monotonic() >= deadline:
                self.stop()
                raise ServerNotReady(f"{self.label} was not ready within "
                                     f"{self.ready_timeout_s:g} s; its log: {self.log_path}")
            time.sleep(0.5)
        self.ready_s = time.monotonic() - t0

    def alive(self) -> bool:
        """True iff the server process still runs."""
        if self.guard is None or self.guard.poll() is not None:
            return False
        return self.pid is None or _pid_alive(self.pid)

    def healthy(self) -> bool:
        """True iff the server runs and its ``/health`` answers 200 (vLLM's API server stays
        up with a dead engine core, answering 500 to everything)."""
        if not self.alive() or self.port is None:
            return False
        try:
            return http_get(HOST, self.port, "/health", timeout=5.0)[0] == 200
        except TRANSPORT_ERRORS:
            return False

    def exit_status(self) -> str:
        """How the server ended, in words (for a crash record)."""
        if self.guard is None:
            return "stopped"
        if self.pid is not None and not _pid_alive(self.pid):
            try:  # the guard reports the server's status once it has cleaned up its group
                self.guard.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        code = self.guard.poll()
        if code is None:
            return "running, /health failing (engine dead)"
        if code > 128:
            try:
                return f"killed by {signal.Signals(code - 128).name}"
            except ValueError:
                return f"exit status {code}"
        return f"exit status {code}"

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server's whole process group (through its guard) and wait for it."""
        g, self.guard = self.guard, None
        if g is None:
            return
        if g.poll() is None:
            g.send_signal(signal.SIGTERM)
            try:
                g.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                g.kill()
                g.wait()
        if self.pid is not None:  # the guard is gone: make sure its group is too
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if g.stdout is not None:
            g.stdout.close()

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "url": self.url, "pid": self.pid, "starts": self.starts,
                "ready_s": None if self.ready_s is None else round(self.ready_s, 2),
                "log": str(self.log_path), "model": self.model}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:
    """In the guard: SIGTERM it when the harness dies (it then stops the server)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # the guard also polls its parent
