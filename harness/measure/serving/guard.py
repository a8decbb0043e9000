"""A server's guard: ``python -m harness.measure.serving.guard LOG -- ARGV...``.

Starts ``ARGV`` in a session (process group) of its own, its output appended to ``LOG``,
prints the server's PID on one line, then waits. The server's whole group (vLLM's API server
and its engine core) is stopped, SIGTERM then SIGKILL after a grace period, when

- the guard gets SIGTERM or SIGINT (the harness stopping it),
- the guard's parent, the harness, dies, even by SIGKILL (checked every 0.2 s), or
- the server exits by itself (the guard then exits with the server's status).

So killing a run never leaves a server behind. Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_S = 10.0


def _kill_group(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        proc.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 1:
        print("usage: python -m harness.measure.serving.guard LOG -- ARGV...", file=sys.stderr)
        return 2
    log_path, cmd = argv[0], argv[2:]
    parent = os.getppid()
    with open(log_path, "ab", buffering=0) as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    stop = {"asked": False}

    def on_signal(signum, frame):  # noqa: ARG001
        stop["asked"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(proc.pid, flush=True)
    while True:
        code = proc.poll()
        if code is not None:
            _kill_group(proc, grace_s=2.0)  # children it left behind
            return code if code >= 0 else 128 - code
        if stop["asked"] or os.getppid() != parent:
            _kill_group(proc)
            proc.wait()
            return 0
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
