"""Builds libautd3's shared library with CMake and puts it into the package (libautd3/_lib/).

Environment:
  LIBAUTD3_PREBUILT    a built library file to package instead of building one (the wheel script's
                       cross builds: the MinGW libautd3.dll, the aarch64 libautd3.so)
  LIBAUTD3_CMAKE_ARGS  extra CMake arguments for the build (e.g. -DAUTD3_WITH_PCAP=OFF)
  LIBAUTD3_PLAT_NAME   the wheel's platform tag (default: the building host's)

The wheel is tagged py3-none-<platform>: ctypes loads the library, so one wheel serves every
Python 3 version of a platform.
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py as _build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the libautd3 repository


def _built_library(build_dir: Path) -> Path:
    pats = ["libautd3.so.*.*.*", "libautd3.so", "bin/libautd3.dll", "bin/autd3.dll", "libautd3.dylib",
            "*/libautd3.dll", "Release/autd3.dll"]
    for p in pats:
        hits = sorted(glob.glob(str(build_dir / p)))
        if hits:
            return Path(hits[0])
    raise RuntimeError(f"libautd3: no shared library found in {build_dir} after the CMake build")


class build_py(_build_py):
    def run(self) -> None:
        super().run()
        dest = Path(self.build_lib) / "libautd3" / "_lib"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        pre = os.environ.get("LIBAUTD3_PREBUILT")
        if pre:
            src = Path(pre)
        else:
            if not (ROOT / "CMakeLists.txt").exists() or not (ROOT / "include" / "autd3").is_dir():
                raise RuntimeError(f"libautd3: the C sources are not at {ROOT}; build from a clone of the repository "
                                   "or set LIBAUTD3_PREBUILT to a built library")
            bdir = Path(self.build_lib).parent / "cmake-libautd3"
            args = ["cmake", "-S", str(ROOT), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF",
                    "-DAUTD3_BUILD_TOOLS=OFF", "-DAUTD3_LINK_ETHERCRAB=OFF", "-DAUTD3_LINK_SOEM=OFF"]
            args += shlex.split(os.environ.get("LIBAUTD3_CMAKE_ARGS", ""))
            subprocess.check_call(args)
            subprocess.check_call(["cmake", "--build", str(bdir), "--target", "autd3_shared", "--config", "Release",
                                   "-j", os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")])
            src = _built_library(bdir)
        if src.suffix == ".dll":
            name = "autd3.dll" if src.name == "autd3.dll" else "libautd3.dll"
        elif src.suffix == ".dylib" or ".dylib" in src.name:
            name = "libautd3.dylib"
        else:
            name = "libautd3.so"
        shutil.copyfile(src, dest / name)
        print(f"libautd3: packaged {src} as _lib/{name}", file=sys.stderr)


class bdist_wheel(_bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        return "py3", "none", os.environ.get("LIBAUTD3_PLAT_NAME", plat)


class BinaryDistribution(Distribution):
    """The package carries a compiled library: platlib, platform-tagged (not a pure wheel)."""

    def has_ext_modules(self) -> bool:
        return True


setup(distclass=BinaryDistribution, cmdclass={"build_py": build_py, "bdist_wheel": bdist_wheel})
