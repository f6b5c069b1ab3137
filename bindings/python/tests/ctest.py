"""ctest entries of the Python binding (bindings/python/CMakeLists.txt):

  ctest.py api LIB           pytest on the in-process emulator (every test but echocat)
  ctest.py echocat LIB       pytest tests/test_echocat.py (run inside tools/netns/autd3-netns)
  ctest.py mypy LIB          mypy --strict on the package and the examples
  ctest.py wheel LIB WHEELHOUSE   build a wheel around LIB, install it into a fresh venv offline, use it

LIB is the build's shared library (LIBAUTD3_LIBRARY for the source tree's package). Exit 77 (ctest
SKIP_RETURN_CODE) with the reason printed when what a test needs is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PKG = HERE.parent
SKIP = 77


def need(*mods: str) -> None:
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIP: {sys.executable} lacks {', '.join(missing)} (scripts/setup-deps.sh installs them)")
        sys.exit(SKIP)


def env(lib: str) -> dict[str, str]:
    e = dict(os.environ, LIBAUTD3_LIBRARY=lib, PYTHONPATH=str(PKG / "src"), PYTHONDONTWRITEBYTECODE="1")
    return e


def main() -> int:
    what, lib = sys.argv[1], sys.argv[2]
    if what == "api":
        need("pytest", "numpy")
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE),
                                "--ignore", str(HERE / "test_echocat.py")], env=env(lib), cwd=PKG)
    if what == "echocat":
        need("pytest", "numpy")
        if not os.environ.get("AUTD3_TEST_IFNAME"):
            print("SKIP: not inside autd3-netns (AUTD3_TEST_IFNAME unset)")
            return SKIP
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                str(HERE / "test_echocat.py")], env=env(lib), cwd=PKG)
    if what == "mypy":
        need("mypy", "numpy")
        return subprocess.call([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
                                os.devnull, "src/libautd3", "examples"], env=env(lib), cwd=PKG)
    if what == "wheel":
        need("setuptools", "wheel", "pip")
        house = Path(sys.argv[3])
        if not list(house.glob("numpy-*.whl")):
            print(f"SKIP: no numpy wheel in {house} for the offline install (scripts/setup-deps.sh fetches it)")
            return SKIP
        with tempfile.TemporaryDirectory(prefix="libautd3-wheel-") as tmp:
            t = Path(tmp)
            e = dict(os.environ, LIBAUTD3_PREBUILT=lib)
            e.pop("LIBAUTD3_LIBRARY", None)
            subprocess.check_call([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                                   "-w", str(t / "dist"), str(PKG)], env=e)
            wheels = list((t / "dist").glob("libautd3-*.whl"))
            assert len(wheels) == 1 and "-py3-none-" in wheels[0].name, wheels
            print(f"built {wheels[0].name}")
            subprocess.check_call([sys.executable, "-m", "venv", str(t / "venv")])
            py = str(t / "venv" / "bin" / "python")
            subprocess.check_call([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house),
                                   str(wheels[0])])
            smoke = ("import libautd3 as a, pathlib\n"
                     "lib = pathlib.Path(a._native.lib()._name)\n"
                     "assert lib.parent == pathlib.Path(a.__file__).parent / '_lib', lib\n"
                     "with a.Client.open(a.Geometry.row(1), a.EmulatorLinkOption()) as c:\n"
                     "    assert c.send_checked(a.Focus((0, 0, 150))).all_executed\n"
                     "print('fresh venv OK:', a.library_version(), lib.name)\n")
            e2 = {k: v for k, v in os.environ.items() if k not in ("LIBAUTD3_LIBRARY", "PYTHONPATH")}
            return subprocess.call([py, "-c", smoke], env=e2, cwd=tmp)
    print(f"unknown mode {what}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
