"""PEP 517 backend: setuptools' own, plus PyPI's cmake as a build requirement when the machine has
no CMake 3.25 or newer (the library's minimum), so `pip install ./bindings/python` needs only a C
compiler. A prebuilt library (LIBAUTD3_PREBUILT, the wheel script's cross builds) needs no CMake."""

import os
import re
import shutil
import subprocess

from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F401,F403


def _need_cmake():
    if os.environ.get("LIBAUTD3_PREBUILT"):
        return []
    exe = shutil.which("cmake")
    if exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
            m = re.search(r"(\d+)\.(\d+)", out)
            if m and (int(m.group(1)), int(m.group(2))) >= (3, 25):
                return []
        except (OSError, subprocess.CalledProcessError):
            pass
    return ["cmake>=3.25"]


def get_requires_for_build_wheel(config_settings=None):
    return _orig.get_requires_for_build_wheel(config_settings) + _need_cmake()


def get_requires_for_build_editable(config_settings=None):
    return _orig.get_requires_for_build_editable(config_settings) + _need_cmake()
