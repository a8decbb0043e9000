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
    from harness.registry import RegistryError, adapter_class, is_installed, registered

    rows = []
    for n in registered(include_hidden=True):
        try:
            cls = adapter_class(n)
        except RegistryError as e:  # a third-party entry point that does not load
            rows.append((n, "NO", "-", "-", str(e), ""))
            continue
        inst = is_installed(n)
        cfgs = "; ".join(f"{c}={json.dumps(o)}" if o else c for c, o in cls.configs.items())
        hidden = (cls.hidden_reason or "hidden") if cls.hidden else "-"
        rows.append((n, "yes" if inst else "NO", cls.version() or "-", hidden,
                     "" if inst else (cls.how_to_install() or ""), cfgs))
    print(f"{'engine':<14} {'installed':<10} {'version':<18} {'in --engine all':<16} configurations")
    for n, inst, version, hidden, hint, cfgs in rows:
        print(f"{n:<14} {inst:<10} {version:<18} {'yes' if hidden == '-' else 'no':<16} {cfgs}")
        if hidden != "-":
            print(f"{'':<14} hidden: {hidden}")
        if hint:
            print(f"{'':<14} install: {hint}")
    return 0
