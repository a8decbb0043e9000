"""The server of each engine row of a run that sends requests to servers (the serve suite's
streams, the hazards suite's served hazards).

With ``launch`` each row's server is started on 127.0.0.1 (its command from the adapter's
``server_command``, its interpreter from the row's environment, a random-weight model folder
the harness writes), probed until ready, logged to ``servers/<row>.log`` in the run folder,
and stopped when the row is done (:mod:`harness.measure.serving.launcher`); it can be started
again after a crash. With ``server`` (``URL``, ``dialect+URL`` or ``LABEL=URL,...``) the
user's server is driven as it is. ``servers/servers.json`` in the run folder lists every
server opened (URL, PID, starts, version), written at once so that whoever stops a killed
run finds the PIDs there.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from harness.measure.serving.launcher import (HOST, ServerProcess, ServerUnavailable,
                                              server_log_line)
from harness.measure.serving.openai_client import (OpenAIClient, server_for, split_server,
                                                   takes_seeds)

__all__ = ["DEATH_GRACE_S", "SERVER_DEFAULTS", "RowServers", "Target"]

log = logging.getLogger("harness")

#: Seconds to wait, after a request lost its connection, for the server's death to show.
DEATH_GRACE_S = 3.0

#: The run options :class:`RowServers` reads, with their defaults: ``launch`` (the harness
#: starts each row's server), ``server`` (or drives this ``--server`` value), ``model`` (the
#: model shape of launched servers, random weights), ``ready_timeout_s`` (seconds a launched
#: server may take to become ready).
SERVER_DEFAULTS: dict[str, Any] = {"launch": False, "server": None, "model": "tiny",
                                   "ready_timeout_s": 600.0}


@dataclass
class Target:
    """One engine row's server: launched (``server``, its process) or given by URL
    (``server`` None), and the client that talks to it."""

    label: str
    client: OpenAIClient
    server: ServerProcess | None = None
    #: requests carry a seed (the row's server takes per-request seeds)
    seeded: bool = True

    def log_size(self) -> int | None:
        """The launched server's log size now, bytes (None: not launched, or no log)."""
        if self.server is None:
            return None
        try:
            return self.server.log_path.stat().st_size
        except OSError:
            return None

    def log_line(self, span: tuple[int | None, int | None] | None) -> str | None:
        """The first error line the launched server logged since ``span[0]`` (its log's
        size then, bytes; :func:`~harness.measure.serving.launcher.server_log_line`); None
        for a server given by URL or a log with none."""
        if self.server is None:
            return None
        return server_log_line(self.server.log_path, span)


class RowServers:
    """Opens, watches, restarts and closes the server of one engine row at a time.

    Parameters
    ----------
    run_dir:
        The run's folder: launched servers log to ``servers/`` in it.
    tokenizer:
        The run's tokenizer (launched servers load the Llama-3 one the harness writes, or
        a checkpoint's own, ``--model PATH``, whose folder the run's tokenizer is).
    options:
        The run's options; those of :data:`SERVER_DEFAULTS` are read, the rest ignored.
    """

    def __init__(self, run_dir: Path, tokenizer: str, options: Mapping[str, Any]) -> None:
        self.run_dir = Path(run_dir)
        self.tokenizer = tokenizer
        self.o = {**SERVER_DEFAULTS, **{k: v for k, v in options.items() if k in SERVER_DEFAULTS}}
        self.target: Target | None = None
        #: every server opened, as ``servers/servers.json`` lists them
        self.servers: list[dict[str, Any]] = []

    def open(self, engine: Mapping[str, Any]) -> Target:
        """The server of the engine row ``engine`` (a job's ``engine`` block: ``label``,
        ``name``, ``config``, ``env``), the row open before it closed first.

        Raises
        ------
        ServerUnavailable
            When there is none: no ``--launch``/``--server``, no server for the row, no answer
            from the URL, a row with no server to launch, a server that is never ready."""
        from harness.registry import adapter_class

        label = engine["label"]
        if self.target is not None and self.target.label == label:
            return self.target
        self.close()
        if not self.o["launch"]:
            if not self.o["server"]:
                raise ServerUnavailable("the serve suite needs --launch ENGINE:BACKEND (the "
                                        "harness starts the server) or --server URL")
            try:
                spec = server_for(self.o["server"], label)
            except ValueError as e:
                raise ServerUnavailable(str(e)) from None
            dialect, url = split_server(spec)
            client = OpenAIClient(url, dialect=dialect, timeout=600.0)
            try:
                client.detect()
            except (OSError, RuntimeError, ValueError) as e:
                raise ServerUnavailable(f"--server {spec}: no answer from "
                                        f"/v1/models ({' '.join(str(e).split())[:200]})") from None
            self.target = Target(label, client,
                                 seeded=takes_seeds(engine.get("name"), client.dialect))
            self.servers.append({"engine": label, "url": url, "dialect": client.dialect,
                                 "server_version": client.server_version(),
                                 "launched": False})
            self._write_servers()
            return self.target
        server = self._launch(engine)
        cls = adapter_class(engine["name"])
        client = OpenAIClient(server.url, dialect=getattr(cls, "dialect", None),
                              model=server.model, timeout=600.0)
        seeded = getattr(cls, "seeded_requests", lambda: True)()
        self.target = Target(label, client, server, seeded=seeded)
        return self.target

    def _launch(self, engine: Mapping[str, Any]) -> ServerProcess:
        from engines.vocab import load_vocabulary
        from engines.vocab.gguf import cache_root
        from harness.measure.serving.vllm_offline import model_folder
        from harness.model.checkpoint import looks_like_checkpoint
        from harness.registry import adapter_class
        from harness.registry.environments import environment

        cls = adapter_class(engine["name"])
        if not hasattr(cls, "server_command"):
            raise ServerUnavailable(f"engine {engine['label']} has no server to launch; the "
                                    "serve suite launches serving engines (harness engines "
                                    "lists them)")
        checkpoint = looks_like_checkpoint(str(self.o["model"]))
        if self.tokenizer != "llama3" and not checkpoint:
            raise ServerUnavailable(f"launched servers load the Llama-3 tokenizer the harness "
                                    f"writes; run the serve suite with --tokenizer llama3, not "
                                    f"{self.tokenizer!r}")
        env = engine.get("env")
        python = str(environment(env).python()) if env else sys.executable
        # a size: the folder written here (random weights, the Llama-3 tokenizer); a
        # checkpoint (--model PATH): its own folder, weights and tokenizer
        model_dir = str(model_folder(str(self.o["model"]), load_vocabulary(self.tokenizer),
                                     cache_root() / "models"))
        options = cls.configs[engine["config"]]
        safe = engine["label"].replace(":", "-").replace("@", "-").replace("/", "-")
        command = getattr(cls, "server_command")
        server = ServerProcess(lambda port: command(python, model_dir, options, HOST, port),
                               self.run_dir / "servers" / f"{safe}.log",
                               ready_timeout_s=float(self.o["ready_timeout_s"]),
                               label=f"{engine['label']} server")
        log.info("starting %s (log: %s)", server.label, server.log_path)
        server.start()  # ServerNotReady is a ServerUnavailable
        log.info("%s ready in %.0f s on %s (pid %s)", server.label, server.ready_s, server.url,
                 server.pid)
        self.servers.append({"engine": engine["label"], **server.describe(),
                             "server_version": OpenAIClient(server.url).server_version(),
                             "launched": True})
        self._write_servers()  # at once: whoever stops a killed run finds the PID here
        return server

    def close(self) -> None:
        """Stop the open row's launched server (a URL's is left as it is)."""
        t, self.target = self.target, None
        if t is not None and t.server is not None:
            t.server.stop()
            for s in self.servers:
                if s["engine"] == t.label and s["pid"] == t.server.pid:
                    s["starts"] = t.server.starts
        self._write_servers()

    def _write_servers(self) -> None:
        if self.servers:
            path = self.run_dir / "servers" / "servers.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.servers, indent=1))

    @staticmethod
    def alive(target: Target) -> bool:
        """False once the launched server is gone. A healthy server answers at once; one
        that is not is watched for up to :data:`DEATH_GRACE_S` seconds (a lost connection is
        seen before the process's exit), so a failed request stalls a stream's schedule only
        when the server is in trouble."""
        server = target.server
        if server is None:
            raise ValueError(f"{target.label}: a server given by URL has no process to watch")
        end = time.monotonic() + DEATH_GRACE_S
        while True:
            if not server.alive():
                return False
            if server.healthy():
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.2)

    def restart(self, target: Target) -> None:
        """Stop the launched server of ``target`` and start it again (a new port: the
        client follows). Raises
        :class:`~harness.measure.serving.launcher.ServerNotReady` when it is not ready in time."""
        server = target.server
        if server is None:
            raise ValueError(f"{target.label}: a server given by URL cannot be restarted")
        server.stop()
        server.start()
        target.client.base = server.url
        if server.port is not None:  # set by a start that returned
            target.client.port = server.port
        for s in self.servers:
            if s["engine"] == target.label:
                s.update(starts=server.starts, pid=server.pid, url=server.url)
        self._write_servers()
