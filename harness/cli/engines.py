"""``harness engines``: the registered engines, installed or not, versions, configurations."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    e = sub.add_parser("engines", help="list engines: installed?, version, configurations")
    e.add_argument("--all", action="store_true", help="include test engines")
    e.set_defaults(handler=cmd_engines)


def cmd_engines(args) -> int:
    from harness.registry import adapter_class, is_installed, registered

    names = registered(include_hidden=args.all)
    print(f"{'engine':<12} {'installed':<10} {'version':<10} configurations")
    for n in names:
        cls = adapter_class(n)
        inst = is_installed(n)
        cfgs = "; ".join(f"{c}={json.dumps(o)}" if o else c for c, o in cls.configs.items())
        print(f"{n:<12} {'yes' if inst else 'NO':<10} {cls.version() or '-':<10} {cfgs}")
    return 0
