"""Writes the API part of docs/python.md from the docstrings: python tools/gen_api_md.py > part.md"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import sys

import libautd3
import libautd3.aio

MODULES = [("libautd3", libautd3, [n for n in libautd3.__all__ if not n.endswith("Error") or n == "AUTD3Error"]),
           ("libautd3.aio", libautd3.aio, libautd3.aio.__all__)]


def doc(o: object) -> str:
    d = inspect.getdoc(o) or ""
    return d.strip()


def sig(o: object) -> str:
    try:
        return str(inspect.signature(o))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def main() -> None:
    out = sys.stdout
    for modname, mod, names in MODULES:
        out.write(f"### `{modname}`\n\n")
        for n in sorted(names):
            o = getattr(mod, n)
            if inspect.ismodule(o) or not (inspect.isclass(o) or inspect.isfunction(o)):
                continue
            if inspect.isfunction(o):
                out.write(f"#### `{n}{sig(o)}`\n\n{doc(o)}\n\n")
                continue
            if issubclass(o, enum.Enum):
                out.write(f"#### enum `{n}`: {', '.join(m.name for m in o)}\n\n{doc(o) if o.__doc__ else ''}\n\n")
                continue
            kind = "dataclass" if dataclasses.is_dataclass(o) else "class"
            out.write(f"#### {kind} `{n}`\n\n{doc(o)}\n\n")
            if dataclasses.is_dataclass(o):
                flds = ", ".join(f"`{f.name}`" for f in dataclasses.fields(o) if not f.name.startswith("_"))
                out.write(f"Fields: {flds}\n\n")
            for mn, m in o.__dict__.items():
                if mn.startswith("_") and mn not in ("__await__", "__enter__", "__aenter__"):
                    continue
                if isinstance(m, libautd3.commands._Param):
                    out.write(f"- `{mn}` (parameter, checked when set)\n")
                elif isinstance(m, property):
                    out.write(f"- `{mn}` (property): {doc(m).splitlines()[0] if doc(m) else ''}\n")
                elif isinstance(m, (classmethod, staticmethod)):
                    f = m.__func__
                    out.write(f"- `{n}.{mn}{sig(f)}`: {' '.join(doc(f).split())}\n")
                elif inspect.isfunction(m):
                    out.write(f"- `{mn}{sig(m)}`: {' '.join(doc(m).split())}\n")
            out.write("\n")
    out.write("### Exceptions\n\n| class | `autd3_err_t` | also a |\n|---|---|---|\n")
    for name, value, cls, extra in libautd3.errors._TABLE:
        out.write(f"| `{cls}` | `AUTD3_E_{name}` ({value}) | {extra.__name__ if extra else ''} |\n")
    out.write("| `NpcapMissingError` | `AUTD3_E_NOT_BUILT` (-7) naming Npcap | NotBuiltError |\n")


if __name__ == "__main__":
    main()
