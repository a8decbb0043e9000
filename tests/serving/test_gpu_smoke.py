"""The GPU scripts' smoke run (``benchmarks/gpu/run.sh --smoke``: every step of the GPU run
at micro size on this CPU), driving the tier's shared xgrammar vLLM server (the one its
other tests use) instead of starting its own four: the smoke checks the script's steps, and
the other backends take the same route with another name (each vLLM start costs the 2-core
machine about half a minute of both cores)."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import ROOT

ROWS = {"xgrammar": "xgrammar"}  # vLLM row → its server's backend


def test_gpu_run_smoke_on_the_shared_servers(vllm_servers, tmp_path):
    spec = vllm_servers.spec(list(ROWS))
    out = tmp_path / "gpu"
    r = subprocess.run(["bash", "benchmarks/gpu/run.sh", "--smoke"], cwd=ROOT,
                       env={**os.environ, "HARNESS_GPU_SERVERS": spec,
                            "HARNESS_GPU_OUT": str(out)},
                       capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    rows = {ln.split()[0] for ln in r.stdout.splitlines() if "maskbench/" in ln}
    assert rows == {"vllm:xgrammar"}, r.stdout
    # the serve step drove the shared servers: none launched by the run
    servers = [json.loads(p.read_text()) for p in out.glob("*/servers/servers.json")]
    assert servers and all(not s["launched"] for run in servers for s in run), servers
    assert {s["url"] for run in servers for s in run} == {
        vllm_servers[b].url for b in ROWS.values()}
