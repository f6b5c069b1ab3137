"""Fixtures: the in-process emulator. The library under test is LIBAUTD3_LIBRARY (ctest sets it to
the build's libautd3.so) or the one inside the installed package."""

from __future__ import annotations

from typing import Iterator

import pytest

import libautd3 as autd


@pytest.fixture
def geometry() -> autd.Geometry:
    return autd.Geometry.row(2)


@pytest.fixture
def client(geometry: autd.Geometry) -> Iterator[autd.Client]:
    c = autd.Client.open(geometry, autd.EmulatorLinkOption())
    yield c
    c.close()
