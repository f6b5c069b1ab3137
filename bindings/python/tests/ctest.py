"""ctest entries of the Python binding (bindings/python/CMakeLists.txt):

  ctest.py api LIB              pytest on the in-process emulator (every test but echocat and layout)
  ctest.py layout LIB           pytest tests/test_layout.py: the ctypes mirrors against the C compiler
  ctest.py echocat LIB          pytest tests/test_echocat.py (run inside tools/netns/autd3-netns)
  ctest.py mypy LIB             mypy --strict on the package and the examples
  ctest.py wheel LIB HOUSE      build a wheel around LIB, install it into a fresh venv offline, use it
  ctest.py example LIB FILE     run an example script (examples/*.py) against the in-process emulator
  ctest.py readme LIB FILE      run the first ```python block of a README
  ctest.py perftest LIB MODE    python -m libautd3.perftest --link emulator --count 200 --mode MODE
  ctest.py manylinux LIB HOUSE WORK   scripts/python-wheels.sh for Linux x86-64 (and aarch64 with its
                                cross compiler): auditwheel show each wheel, install the x86-64 one
                                into a fresh venv and use it
  ctest.py source LIB HOUSE BUILDHOUSE   `pip install ./bindings/python` into a fresh venv: the real
                                CMake build (setuptools and wheel from BUILDHOUSE, else PyPI)

LIB is the build's shared library (LIBAUTD3_LIBRARY for the source tree's package); HOUSE the
folder of wheels for offline installs (build/.wheelhouse). Exit 77 (ctest SKIP_RETURN_CODE) with
the reason printed when what a test needs is not there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PKG = HERE.parent
ROOT = PKG.parent.parent
SKIP = 77
SMOKE = ("import libautd3 as a, pathlib\n"
         "lib = pathlib.Path(a._native.lib()._name)\n"
         "assert lib.parent == pathlib.Path(a.__file__).parent / '_lib', lib\n"
         "with a.Client.open(a.Geometry.row(1), a.EmulatorLinkOption()) as c:\n"
         "    assert c.send_checked(a.Focus((0, 0, 150))).all_executed\n"
         "print('fresh venv OK:', a.library_version(), lib.name)\n")


def skip(why: str) -> int:
    print(f"SKIP: {why}")
    return SKIP


def need(*mods: str) -> None:
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(skip(f"{sys.executable} lacks {', '.join(missing)} (scripts/setup-deps.sh installs them)"))


def env(lib: str) -> dict[str, str]:
    return dict(os.environ, LIBAUTD3_LIBRARY=lib, PYTHONPATH=str(PKG / "src"), PYTHONDONTWRITEBYTECODE="1")


def clean_env() -> dict[str, str]:
    """The environment of a user's venv: nothing pointing at the source tree or the build."""
    return {k: v for k, v in os.environ.items() if k not in ("LIBAUTD3_LIBRARY", "PYTHONPATH", "LIBAUTD3_PREBUILT")}


def fresh_venv(t: Path, house: Path, *install: str, isolation_ok: bool = False) -> str:
    """A new venv in t/venv with `install` pip-installed (numpy from `house`, never the index unless
    `isolation_ok`: a source install fetches its build requirements)."""
    subprocess.check_call([sys.executable, "-m", "venv", str(t / "venv")])
    py = str(t / "venv" / "bin" / "python")
    args = [py, "-m", "pip", "install", "-q", "--find-links", str(house)]
    if not isolation_ok:
        args.append("--no-index")
    subprocess.check_call(args + list(install), env=clean_env())
    return py


def pytest(lib: str, *args: str) -> int:
    need("pytest", "numpy")
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], env=env(lib),
                           cwd=PKG)


def wheel(lib: str, house: Path) -> int:
    need("setuptools", "wheel", "pip")
    if not list(house.glob("numpy-*.whl")):
        return skip(f"no numpy wheel in {house} for the offline install (scripts/setup-deps.sh fetches it)")
    with tempfile.TemporaryDirectory(prefix="libautd3-wheel-") as tmp:
        t = Path(tmp)
        e = dict(clean_env(), LIBAUTD3_PREBUILT=lib)
        subprocess.check_call([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                               "-w", str(t / "dist"), str(PKG)], env=e)
        wheels = list((t / "dist").glob("libautd3-*.whl"))
        assert len(wheels) == 1 and "-py3-none-" in wheels[0].name, wheels
        print(f"built {wheels[0].name}")
        py = fresh_venv(t, house, str(wheels[0]))
        return subprocess.call([py, "-c", SMOKE], env=clean_env(), cwd=tmp)


def manylinux(house: Path, work: Path) -> int:
    need("setuptools", "wheel", "pip", "auditwheel")
    if not list(house.glob("numpy-*.whl")):
        return skip(f"no numpy wheel in {house} for the offline install (scripts/setup-deps.sh fetches it)")
    plats = "linux-x86_64,linux-aarch64" if shutil.which("aarch64-linux-gnu-gcc") else "linux-x86_64"
    out = work / "dist"
    shutil.rmtree(out, ignore_errors=True)
    e = dict(clean_env(), AUTD3_WHEEL_PYTHON=sys.executable, AUTD3_WHEEL_WORK=str(work))
    subprocess.check_call(["bash", str(ROOT / "scripts" / "python-wheels.sh"), "--only", plats, str(out)], env=e)
    wheels = sorted(out.glob("libautd3-*.whl"))
    want = ["manylinux_2_", "x86_64"] + (["aarch64"] if "aarch64" in plats else [])
    names = " ".join(w.name for w in wheels)
    assert all(k in names for k in want), f"expected manylinux wheels for {plats}, got {names}"
    for w in wheels:  # the platform tag auditwheel gave must be one the library satisfies
        shown = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(w)], capture_output=True, text=True,
                               check=True).stdout
        tag = re.search(r"manylinux_\d+_\d+_(x86_64|aarch64)", w.name)
        assert tag and tag.group(0) in " ".join(shown.split()), (w.name, shown)
        print(f"{w.name}: auditwheel show agrees ({tag.group(0)})")
    if "aarch64" not in plats:
        print("linux aarch64: not built (no aarch64-linux-gnu-gcc)")
    x86 = [w for w in wheels if w.name.endswith("x86_64.whl")]
    with tempfile.TemporaryDirectory(prefix="libautd3-manylinux-") as tmp:
        py = fresh_venv(Path(tmp), house, str(x86[0]))
        return subprocess.call([py, "-c", SMOKE], env=clean_env(), cwd=tmp)


def online(host: str = "pypi.org") -> bool:
    try:
        socket.create_connection((host, 443), timeout=5).close()
        return True
    except OSError:
        return False


def source(house: Path, build_house: Path) -> int:
    """What a user types in a fresh clone: pip builds the C library with CMake (setup.py), with build
    isolation (its build requirements from `build_house`, else from PyPI)."""
    have_build_reqs = list(build_house.glob("setuptools-*.whl")) and list(build_house.glob("wheel-*.whl"))
    if not have_build_reqs and not online():
        return skip(f"offline, and {build_house} lacks setuptools and wheel for pip's isolated build")
    if not list(house.glob("numpy-*.whl")) and not online():
        return skip(f"offline, and no numpy wheel in {house}")
    with tempfile.TemporaryDirectory(prefix="libautd3-source-") as tmp:
        t = Path(tmp)
        src = t / "libautd3"  # a copy of the clone's files: pip's build never writes into the tree under test
        files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard"], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        for f in filter(None, files):
            p = ROOT / f
            if p.is_file():
                (src / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, src / f)
        py = fresh_venv(t, house, "--find-links", str(build_house), str(src / "bindings" / "python"),
                        isolation_ok=True)
        return subprocess.call([py, "-c", SMOKE], env=clean_env(), cwd=tmp)


def readme_block(path: Path) -> str:
    m = re.search(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    assert m, f"no ```python block in {path}"
    return m.group(1)


def main() -> int:
    what, lib = sys.argv[1], sys.argv[2]
    if what == "api":
        return pytest(lib, str(HERE), "--ignore", str(HERE / "test_echocat.py"), "--ignore",
                      str(HERE / "test_layout.py"))
    if what == "layout":
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            return skip("no C compiler (cc, gcc or $CC) to compare the ctypes layouts with")
        return pytest(lib, str(HERE / "test_layout.py"))
    if what == "echocat":
        if not os.environ.get("AUTD3_TEST_IFNAME"):
            return skip("not inside autd3-netns (AUTD3_TEST_IFNAME unset)")
        return pytest(lib, str(HERE / "test_echocat.py"))
    if what == "mypy":
        need("mypy", "numpy")
        return subprocess.call([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
                                os.devnull, "src/libautd3", "examples"], env=env(lib), cwd=PKG)
    if what == "wheel":
        return wheel(lib, Path(sys.argv[3]))
    if what == "example":
        need("numpy")
        return subprocess.call([sys.executable, sys.argv[3]], env=env(lib), cwd=PKG)
    if what == "readme":
        need("numpy")
        return subprocess.call([sys.executable, "-c", readme_block(Path(sys.argv[3]))], env=env(lib), cwd=PKG)
    if what == "perftest":
        need("numpy")
        out = subprocess.run([sys.executable, "-m", "libautd3.perftest", "--link", "emulator", "--count", "200",
                              "--devices", "2", "--mode", sys.argv[3]], env=env(lib), cwd=PKG, capture_output=True,
                             text=True)
        print(out.stdout, out.stderr)
        ok = re.search(r"success\s*:\s*200\b", out.stdout) and "cmd / sec" in out.stdout
        return out.returncode or (0 if ok else 1)
    if what == "manylinux":
        return manylinux(Path(sys.argv[3]), Path(sys.argv[4]))
    if what == "source":
        return source(Path(sys.argv[3]), Path(sys.argv[4]))
    print(f"unknown mode {what}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
