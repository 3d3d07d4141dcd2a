"""Refresh ``manylinux`` and ``musllinux`` in ``installer/wh/data/platform.json`` from
auditwheel's policy files (https://github.com/pypa/auditwheel, MIT license): the folder
``src/auditwheel/policy`` of a release (or ``auditwheel/policy`` of its wheel), with
``manylinux-policy.json`` and ``musllinux-policy.json``.

Each policy keeps its name, aliases, the glibc (musl) version its name gives, its allowed
libraries (``lib_whitelist``) and, for manylinux, the symbol versions of every machine
(``symbol_versions``); the per-symbol blacklist is not used. The catch-all ``linux``
policy is left out. What the file held before for a policy and machine must be what the new
files give, else nothing is written (``--replace`` writes anyway, for a new release).

    python tools/auditwheel_policy.py PATH/TO/auditwheel/policy [--replace]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).parents[1] / "installer" / "wh" / "data" / "platform.json"


def _level(name: str, family: str) -> list[int]:
    m = re.fullmatch(rf"{family}_(\d+)_(\d+)", name)
    if m is None:
        raise SystemExit(f"{name}: not a {family} policy name")
    return [int(m.group(1)), int(m.group(2))]


def manylinux(policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": p["name"],
            "aliases": list(p["aliases"]),
            "glibc": _level(p["name"], "manylinux"),
            "libraries": sorted(p["lib_whitelist"]),
            "symbol-versions": {
                machine: {ns: sorted(vs) for ns, vs in sorted(namespaces.items())}
                for machine, namespaces in p["symbol_versions"].items()
            },
        }
        for p in sorted(policies, key=lambda p: -p["priority"])
        if p["name"] != "linux"
    ]


def musllinux(policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    named = [p for p in policies if p["name"] != "linux"]
    return [
        {"name": p["name"], "musl": _level(p["name"], "musllinux"), "libraries": p["lib_whitelist"]}
        for p in sorted(named, key=lambda p: _level(p["name"], "musllinux"))
    ]


def disagreements(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    """Where the data held before says otherwise than the new files, policy by policy and
    machine by machine (a machine the old data did not hold is new, not a disagreement)."""
    by_name = {p["name"]: p for p in new}
    out = []
    for p in old:
        q = by_name.get(p["name"])
        if q is None:
            out.append(f"{p['name']}: not in the new files")
            continue
        for key, value in p.items():
            if key == "symbol-versions":
                for machine, namespaces in value.items():
                    if q[key].get(machine) != namespaces:
                        out.append(f"{p['name']} {machine}: other symbol versions")
            elif q.get(key) != value:
                out.append(f"{p['name']}: another {key}")
    return out


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    facts = json.loads(DATA.read_text(encoding="utf-8"))
    new = {
        "manylinux": manylinux(json.loads((folder / "manylinux-policy.json").read_text())),
        "musllinux": musllinux(json.loads((folder / "musllinux-policy.json").read_text())),
    }
    problems = [d for k, v in new.items() for d in disagreements(facts.get(k, []), v)]
    if problems and "--replace" not in argv:
        raise SystemExit("\n".join(["not written: the data held before differs:", *problems]))
    facts.update(new)
    DATA.write_text(json.dumps(facts, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
