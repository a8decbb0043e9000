"""The packages an offline GPU run needs that the GPU machine's image lacks, pinned.

Walks the requirements of the project (``pyproject.toml``: its dependencies and the
``engines`` extra) as this interpreter has them installed (the versions the project is
tested with), evaluating markers for the target Python (``--python-version``) on Linux
x86_64, and prints ``name==version`` for every distribution of that closure that is not in
the image's package list (``--image``: one name a line; default ``image_packages.txt``
beside this file, a CUDA PyTorch image as on the H200 the first figures came from). What the
image has is not carried, nor what only it needs (torch, transformers, triton, numpy…).

    python benchmarks/gpu/kit_wheels.py --python-version 3.12 > wheels.txt
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def roots() -> list[str]:
    import tomllib

    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(proj.get("dependencies", [])) + list(
        proj.get("optional-dependencies", {}).get("engines", []))


def closure(reqs: list[str], py: str, image: set[str]) -> tuple[dict[str, str], list[str]]:
    """({distribution: installed version} to carry, [names the image provides])."""
    from packaging.requirements import Requirement

    env = {"python_version": py, "python_full_version": py + ".0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    carry: dict[str, str] = {}
    provided: set[str] = set()
    todo = [(r, "") for r in reqs]
    seen: set[tuple[str, str]] = set()
    while todo:
        text, extra = todo.pop()
        r = Requirement(text)
        if r.marker is not None and not r.marker.evaluate({**env, "extra": extra}):
            continue
        name = norm(r.name)
        if name in image:
            provided.add(name)
            continue
        for ex in sorted(r.extras) or [""]:
            if (name, ex) in seen:
                continue
            seen.add((name, ex))
            try:
                dist = md.distribution(r.name)
            except md.PackageNotFoundError:
                carry.setdefault(name, "")  # not installed here: main() refuses
                continue
            carry[name] = dist.version
            for sub in dist.requires or []:
                todo.append((sub, ex))
    return carry, sorted(provided)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python-version", default=f"{sys.version_info[0]}.{sys.version_info[1]}")
    ap.add_argument("--image", default=str(Path(__file__).with_name("image_packages.txt")))
    a = ap.parse_args()
    image = {norm(x.split("#")[0].strip()) for x in Path(a.image).read_text().splitlines()
             if x.split("#")[0].strip()}
    carry, provided = closure(roots(), a.python_version, image)
    missing = sorted(n for n, v in carry.items() if not v)
    if missing:
        # their own requirements could not be walked: the list would be short
        print(f"kit_wheels: not installed in {sys.executable}: {', '.join(missing)}; run it "
              "with the project's environment (bash setup.sh; PY=.venv/bin/python)",
              file=sys.stderr)
        return 1
    for name, ver in sorted(carry.items()):
        print(f"{name}=={ver}" if ver else name)
    print(f"kit_wheels: {len(carry)} to carry; provided by the image: {', '.join(provided)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
