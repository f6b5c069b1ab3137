"""The exception hierarchy: one class per ``autd3_err_t`` code (include/autd3/error.h).

Every error the library returns is raised as the class of its code, carrying ``code`` (the negative C
value), ``name`` (``"TIMEOUT"``, as ``autd3_err_name()``) and ``detail`` (``autd3_last_error()``, read in
the failing call's own thread right after it). Where a built-in exception means the same thing, the
class derives from it too, so ``except TimeoutError`` or ``except ValueError`` work as a Python user
expects. Argument checks the binding itself makes (types, integer ranges that ctypes would otherwise
truncate) raise ``TypeError`` or :class:`InvalidArgumentError` before anything reaches the library.
"""

from __future__ import annotations

from typing import Optional

from ._native import LibraryNotFoundError

__all__ = ["AUTD3Error", "LibraryNotFoundError", "error_class", "raise_for"]


class AUTD3Error(Exception):
    """Base of every error libautd3 reports. ``code``: the C value; ``name``: its name; ``detail``: the message."""

    code: int = 0
    name: str = "UNKNOWN"

    def __init__(self, detail: str = "", code: Optional[int] = None) -> None:
        if code is not None:
            self.code = code
        self.detail = detail
        super().__init__(f"{self.name}: {detail}" if detail else self.name)


# (name, value, class name, extra built-in base): the table of error.h, append only.
_TABLE: list[tuple[str, int, str, Optional[type[BaseException]]]] = [
    ("INVALID_ARGUMENT", -1, "InvalidArgumentError", ValueError),
    ("INVALID_OPTION", -2, "InvalidOptionError", ValueError),
    ("INVALID_CONFIG", -3, "InvalidConfigError", ValueError),
    ("DEVICE_COUNT_RANGE", -4, "DeviceCountRangeError", ValueError),
    ("GEOMETRY_MISMATCH", -5, "GeometryMismatchError", ValueError),
    ("UNKNOWN_LINK", -6, "UnknownLinkError", ValueError),
    ("NOT_BUILT", -7, "NotBuiltError", None),
    ("NOMEM", -8, "NoMemError", MemoryError),
    ("PAYLOAD", -9, "PayloadError", ValueError),
    ("NO_INTERFACE", -20, "NoInterfaceError", None),
    ("PERMISSION", -21, "PermissionDeniedError", PermissionError),
    ("NO_DEVICE", -22, "NoDeviceError", None),
    ("NOT_AUTD", -23, "NotAutdError", None),
    ("DEVICE_COUNT_MISMATCH", -24, "DeviceCountMismatchError", None),
    ("SYNC_TIMEOUT", -25, "SyncTimeoutError", TimeoutError),
    ("STATE_TIMEOUT", -26, "StateTimeoutError", TimeoutError),
    ("IO", -27, "IoError", OSError),
    ("CONNECT", -28, "ConnectError", ConnectionError),
    ("PROTOCOL", -29, "ProtocolError", None),
    ("VERSION", -30, "VersionError", None),
    ("REMOTE", -31, "RemoteError", None),
    ("ADS", -32, "AdsError", None),
    ("PEER_CLOSED", -33, "PeerClosedError", ConnectionError),
    ("LINK", -34, "LinkError", None),
    ("SECOND_MASTER", -35, "SecondMasterError", None),
    ("TIMEOUT", -40, "TimedOutError", TimeoutError),
    ("DEVICE", -41, "DeviceError", None),
    ("CLOSED", -42, "ClosedError", None),
    ("PENDING", -43, "PendingError", TimeoutError),
    ("BUSY", -44, "BusyError", None),
    ("DEVICE_RESET", -45, "DeviceResetError", None),
    ("OUTCOME_UNKNOWN", -46, "OutcomeUnknownError", None),
    ("INVALID_HANDLE", -47, "InvalidHandleError", None),
    ("INTERNAL", -99, "InternalError", None),
]

_BY_CODE: dict[int, type[AUTD3Error]] = {}


# One class per row of _TABLE (written out so that type checkers and IDEs see real classes).
class InvalidArgumentError(AUTD3Error, ValueError):
    """``AUTD3_E_INVALID_ARGUMENT`` (-1)."""

    code = -1
    name = "INVALID_ARGUMENT"


class InvalidOptionError(AUTD3Error, ValueError):
    """``AUTD3_E_INVALID_OPTION`` (-2)."""

    code = -2
    name = "INVALID_OPTION"


class InvalidConfigError(AUTD3Error, ValueError):
    """``AUTD3_E_INVALID_CONFIG`` (-3)."""

    code = -3
    name = "INVALID_CONFIG"


class DeviceCountRangeError(AUTD3Error, ValueError):
    """``AUTD3_E_DEVICE_COUNT_RANGE`` (-4)."""

    code = -4
    name = "DEVICE_COUNT_RANGE"


class GeometryMismatchError(AUTD3Error, ValueError):
    """``AUTD3_E_GEOMETRY_MISMATCH`` (-5)."""

    code = -5
    name = "GEOMETRY_MISMATCH"


class UnknownLinkError(AUTD3Error, ValueError):
    """``AUTD3_E_UNKNOWN_LINK`` (-6)."""

    code = -6
    name = "UNKNOWN_LINK"


class NotBuiltError(AUTD3Error):
    """``AUTD3_E_NOT_BUILT`` (-7)."""

    code = -7
    name = "NOT_BUILT"


class NoMemError(AUTD3Error, MemoryError):
    """``AUTD3_E_NOMEM`` (-8)."""

    code = -8
    name = "NOMEM"


class PayloadError(AUTD3Error, ValueError):
    """``AUTD3_E_PAYLOAD`` (-9)."""

    code = -9
    name = "PAYLOAD"


class NoInterfaceError(AUTD3Error):
    """``AUTD3_E_NO_INTERFACE`` (-20)."""

    code = -20
    name = "NO_INTERFACE"


class PermissionDeniedError(AUTD3Error, PermissionError):
    """``AUTD3_E_PERMISSION`` (-21)."""

    code = -21
    name = "PERMISSION"


class NoDeviceError(AUTD3Error):
    """``AUTD3_E_NO_DEVICE`` (-22)."""

    code = -22
    name = "NO_DEVICE"


class NotAutdError(AUTD3Error):
    """``AUTD3_E_NOT_AUTD`` (-23)."""

    code = -23
    name = "NOT_AUTD"


class DeviceCountMismatchError(AUTD3Error):
    """``AUTD3_E_DEVICE_COUNT_MISMATCH`` (-24)."""

    code = -24
    name = "DEVICE_COUNT_MISMATCH"


class SyncTimeoutError(AUTD3Error, TimeoutError):
    """``AUTD3_E_SYNC_TIMEOUT`` (-25)."""

    code = -25
    name = "SYNC_TIMEOUT"


class StateTimeoutError(AUTD3Error, TimeoutError):
    """``AUTD3_E_STATE_TIMEOUT`` (-26)."""

    code = -26
    name = "STATE_TIMEOUT"


class IoError(AUTD3Error, OSError):
    """``AUTD3_E_IO`` (-27)."""

    code = -27
    name = "IO"


class ConnectError(AUTD3Error, ConnectionError):
    """``AUTD3_E_CONNECT`` (-28)."""

    code = -28
    name = "CONNECT"


class ProtocolError(AUTD3Error):
    """``AUTD3_E_PROTOCOL`` (-29)."""

    code = -29
    name = "PROTOCOL"


class VersionError(AUTD3Error):
    """``AUTD3_E_VERSION`` (-30)."""

    code = -30
    name = "VERSION"


class RemoteError(AUTD3Error):
    """``AUTD3_E_REMOTE`` (-31)."""

    code = -31
    name = "REMOTE"


class AdsError(AUTD3Error):
    """``AUTD3_E_ADS`` (-32)."""

    code = -32
    name = "ADS"


class PeerClosedError(AUTD3Error, ConnectionError):
    """``AUTD3_E_PEER_CLOSED`` (-33)."""

    code = -33
    name = "PEER_CLOSED"


class LinkError(AUTD3Error):
    """``AUTD3_E_LINK`` (-34)."""

    code = -34
    name = "LINK"


class SecondMasterError(AUTD3Error):
    """``AUTD3_E_SECOND_MASTER`` (-35)."""

    code = -35
    name = "SECOND_MASTER"


class TimedOutError(AUTD3Error, TimeoutError):
    """``AUTD3_E_TIMEOUT`` (-40)."""

    code = -40
    name = "TIMEOUT"


class DeviceError(AUTD3Error):
    """``AUTD3_E_DEVICE`` (-41)."""

    code = -41
    name = "DEVICE"


class ClosedError(AUTD3Error):
    """``AUTD3_E_CLOSED`` (-42)."""

    code = -42
    name = "CLOSED"


class PendingError(AUTD3Error, TimeoutError):
    """``AUTD3_E_PENDING`` (-43)."""

    code = -43
    name = "PENDING"


class BusyError(AUTD3Error):
    """``AUTD3_E_BUSY`` (-44)."""

    code = -44
    name = "BUSY"


class DeviceResetError(AUTD3Error):
    """``AUTD3_E_DEVICE_RESET`` (-45)."""

    code = -45
    name = "DEVICE_RESET"


class OutcomeUnknownError(AUTD3Error):
    """``AUTD3_E_OUTCOME_UNKNOWN`` (-46)."""

    code = -46
    name = "OUTCOME_UNKNOWN"


class InvalidHandleError(AUTD3Error):
    """``AUTD3_E_INVALID_HANDLE`` (-47)."""

    code = -47
    name = "INVALID_HANDLE"


class InternalError(AUTD3Error):
    """``AUTD3_E_INTERNAL`` (-99)."""

    code = -99
    name = "INTERNAL"


for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, AUTD3Error) and _cls is not AUTD3Error:
        _BY_CODE[_cls.code] = _cls
        __all__.append(_cls.__name__)
assert len(_BY_CODE) == len(_TABLE)


def error_class(code: int) -> type[AUTD3Error]:
    """The class of a code (AUTD3Error itself for a code this binding does not know)."""
    return _BY_CODE.get(code, AUTD3Error)


class NpcapMissingError(NotBuiltError):
    """``AUTD3_E_NOT_BUILT`` because Windows lacks Npcap's ``wpcap.dll`` (raw Ethernet links need it):
    install Npcap with "WinPcap API-compatible Mode". A NotBuiltError, so ``except NotBuiltError``
    catches it too."""

    def __init__(self, detail: str = "", code: Optional[int] = None) -> None:
        super().__init__(detail, code)
        self.args = ("NOT_BUILT: Npcap is missing: install it from https://npcap.com with \"Install Npcap in "
                     f"WinPcap API-compatible Mode\" checked, then start Python again ({detail})",)


def make_error(code: int, detail: str) -> AUTD3Error:
    cls = error_class(code)
    if cls is NotBuiltError and ("Npcap" in detail or "wpcap.dll" in detail):
        return NpcapMissingError(detail)  # the library's packet back end (src/nic/wpcap.c) found no Npcap
    return cls(detail) if cls is not AUTD3Error else AUTD3Error(detail, code)


__all__.append("NpcapMissingError")


def raise_for(code: int) -> None:
    """Raise the class of a non-zero code with the calling thread's autd3_last_error(); no-op for AUTD3_OK."""
    if code == 0:
        return
    from ._native import last_error

    raise make_error(code, last_error())
