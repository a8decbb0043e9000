"""vLLM servers shared by the serving tier (:class:`VllmServers`, the fixture
``vllm_servers`` in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def need_vllm():
    """vLLM's own environment (./.venv-vllm); fails, saying how to make it, when absent (a
    skipped check is not a passed one)."""
    from harness.registry.environments import environment

    env = environment("vllm")
    assert env.has("vllm"), (f"no vLLM environment at {env.python()}: make it with "
                             f"`bash setup.sh` (or bash scripts/setup_vllm.sh)")
    return env


class VllmServers:
    """``servers["xgrammar"]``: vLLM's OpenAI-compatible server with that structured-output
    backend on the micro model (random weights), started on first use on 127.0.0.1."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: dict[str, Any] = {}

    def __getitem__(self, backend: str):
        self.start([backend])
        return self.started[backend]

    def start(self, backends: list[str]) -> None:
        """Start the servers of ``backends`` not yet started, side by side (a start is
        mostly one process's imports: two overlap on 2 cores), and wait until each is
        ready. Spawned from this thread: a server is tied to the thread that spawns it."""
        todo = [b for b in dict.fromkeys(backends) if b not in self.started]
        if not todo:
            return
        from engines.vllm_engine import VllmEngine
        from engines.vocab import load_vocabulary
        from engines.vocab.gguf import cache_root
        from harness.measure.serving.launcher import HOST, ServerProcess
        from harness.measure.serving.vllm_offline import write_hf_model

        env = need_vllm()
        model = str(write_hf_model("micro", load_vocabulary("llama3"), cache_root() / "models"))

        def command_for(backend: str):
            def command(port: int):
                argv, extra = VllmEngine.server_command(str(env.python()), model,
                                                        {"backend": backend}, HOST, port)
                if "VLLM_CPU_KVCACHE_SPACE" in extra:  # micro's KV fits in 1 GiB; four live
                    extra = {**extra, "VLLM_CPU_KVCACHE_SPACE": "1"}
                return argv, extra
            return command

        for backend in todo:
            sp = ServerProcess(command_for(backend), self.logs / f"vllm-{backend}.log",
                               ready_timeout_s=600, label=f"vllm:{backend}")
            sp.spawn()
            self.started[backend] = sp  # stopped with the rest even if never ready
        for backend in todo:
            self.started[backend].wait_ready()

    def spec(self, rows: list[str]) -> str:
        """The ``--server`` value naming one started server per engine row of vLLM (its
        configurations: ``xgrammar``, ``default``, …): ``vllm:ROW=vllm+URL,…``."""
        from engines.vllm_engine import VllmEngine

        self.start([VllmEngine.configs[r]["backend"] for r in rows])
        return ",".join(f"vllm:{r}=vllm+{self[VllmEngine.configs[r]['backend']].url}"
                        for r in rows)

    def stop(self) -> list[int]:
        """Stop every started server and return their PIDs."""
        pids = [sp.pid for sp in self.started.values()]
        for sp in self.started.values():
            sp.stop()
        return pids
