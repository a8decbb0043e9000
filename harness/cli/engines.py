"""``harness engines``: every registered engine row, installed or not: version,
configurations, why it is hidden from ``--engine all``, and how to install it."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    e = sub.add_parser("engines", help="list every engine row: installed?, version, "
                                       "configurations, why hidden, how to install")
    e.add_argument("--all", action="store_true",
                   help="(kept for old scripts: every row is listed)")
    e.set_defaults(handler=cmd_engines)


def cmd_engines(args) -> int:
    from harness.registry.environments import ENVIRONMENTS, environment
    from harness.registry import EngineSpec, RegistryError, adapter_class, registered

    # name, installed, version, hidden, install hint, configurations, environment
    rows: list[tuple[str, str, str, str, str, str, str | None]] = []
    for n in registered(include_hidden=True):
        try:
            cls = adapter_class(n)
        except RegistryError as e:  # a third-party entry point that does not load
            rows.append((n, "NO", "-", "-", str(e), "", None))
            continue
        spec = EngineSpec(n)
        inst = spec.installed()
        cfgs = "; ".join(f"{c}={json.dumps(o)}" if o else c for c, o in cls.configs.items())
        hidden = (cls.hidden_reason or "hidden") if cls.hidden else "-"
        rows.append((n, "yes" if inst else "NO", spec.version() or "-", hidden,
                     "" if inst else (spec.how_to_install() or ""), cfgs, cls.environment))
    w = max([14, *(len(r[0]) for r in rows)])  # the engine column fits the longest name
    print(f"{'engine':<{w}} {'installed':<10} {'version':<18} {'in --engine all':<16} "
          "configurations")
    for n, installed, version, hidden, hint, cfgs, env in rows:
        print(f"{n:<{w}} {installed:<10} {version:<18} {'yes' if hidden == '-' else 'no':<16} {cfgs}")
        if hidden != "-":
            print(f"{'':<{w}} hidden: {hidden}")
        if hint:
            print(f"{'':<{w}} install: {hint}")
        if env:
            print(f"{'':<{w}} runs in: environment {env} ({environment(env).python()})")
    # the environments beside the harness's own: what each holds (a row NAME@ENV runs
    # the engine NAME from there, e.g. xgrammar@vllm)
    for other in ENVIRONMENTS.values():
        d = other.describe()
        if d["available"]:
            held = ", ".join(f"{k} {v}" for k, v in d["versions"].items())
            print(f"\nenvironment {other.name}: {d['python']}\n  holds {held}\n"
                  f"  rows: NAME@{other.name} runs an engine from there (e.g. xgrammar@{other.name})")
        else:
            print(f"\nenvironment {other.name}: not there ({d['python']}): "
                  f"{other.setup}")
    return 0
