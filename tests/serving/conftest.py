"""One vLLM server per backend for the whole serving tier, started on first use and
stopped (by PID) when the session ends: the serving tests and the GPU scripts' smoke run
share them instead of each starting its own (a start is ~50 s on 2 cores)."""

from __future__ import annotations

import pytest

from tests.serving.servers import VllmServers


@pytest.fixture(scope="session")
def vllm_servers(tmp_path_factory):
    from tests.unit.test_serve import _gone

    servers = VllmServers(tmp_path_factory.mktemp("vllm-servers"))
    yield servers
    pids = servers.stop()
    assert all(_gone(p) for p in pids), pids


def pytest_collection_modifyitems(items):
    """Tests that start their own server first, then those on the shared xgrammar server,
    then the GPU smoke run (all four shared servers): at most four servers live at once."""
    def rank(item) -> int:
        if "vllm_servers" not in getattr(item, "fixturenames", ()):
            return 0
        return 2 if "gpu_smoke" in item.nodeid else 1

    items.sort(key=rank)  # stable: file order within a rank
