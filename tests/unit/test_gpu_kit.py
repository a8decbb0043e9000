"""The offline GPU kit's wheel list (benchmarks/gpu/kit_wheels.py): what the GPU machine's
image lacks, pinned to the versions installed here; nothing the image already holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kit_carries_the_engines_and_their_kin_not_the_image():
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu/kit_wheels.py"),
                        "--python-version", "3.12"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    carried = {line.split("==")[0]: line.split("==")[1] if "==" in line else ""
               for line in p.stdout.split()}
    for name in ("xgrammar", "llguidance", "outlines-core", "llama-models", "jsonschema",
                 "referencing", "rpds-py", "pydantic", "pydantic-core", "lark",
                 "rfc3987-syntax", "webcolors", "apache-tvm-ffi"):
        assert carried.get(name), name  # present and pinned
    for name in ("torch", "transformers", "triton", "numpy", "pandas", "tokenizers"):
        assert name not in carried, name
    assert "provided by the image: " in p.stderr and "torch" in p.stderr
