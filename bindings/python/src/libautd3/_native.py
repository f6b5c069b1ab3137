"""ctypes mirror of the C ABI (include/autd3/*.h): struct layouts, prototypes, the library loader.

Nothing here is public API. Every struct below mirrors one C struct field for field; the size-tagged
ones (docs/api.md "Structs that can grow") are initialised by the library's own ``*_init`` /
``*_default`` functions and read through the ``*_sized`` functions with ``ctypes.sizeof`` of the
mirror, so a mirror that falls behind a newer library still works (it gets the prefix it knows) and
one that does not match any layout the library knows is refused by the library, not misread.
``tests/test_layout.py`` compares every mirror with the C compiler's ``sizeof``/``offsetof``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from ctypes import (
    POINTER,
    Structure,
    Union,
    c_bool,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_uint,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Optional

MAX_DEVICES = 128
NUM_TRANSDUCERS = 249
PAYLOAD_BYTES = 624
MAX_INFLIGHT = 127
XOR_HASH_MAX_DATA = 620
LOOP_INFINITE = 0xFFFF
PATTERN_STM_MAX_COMMANDS = 1026
FOCI_STM_MAX_COMMANDS = 854
MODULATION_MAX_COMMANDS = 109
FOCI_NUM_MAX = 8
EXEC_LOG_CAPACITY = 2048
OUTPUT_MOD_SAMPLES = 1024

c_err = c_int  # autd3_err_t
c_enum = c_int


class FwVersion(Structure):
    _fields_ = [(n, c_uint8) for n in ("cpu_major", "cpu_minor", "cpu_patch", "fpga_major", "fpga_minor", "fpga_patch")]


class TimingModel(Structure):
    _fields_ = [("take_on_sync0", c_bool), ("fifo_latency_ns", c_uint32), ("ll_latency_ns", c_uint32),
                ("publish_on_sync0", c_bool)]


class EmulatorOption(Structure):
    _fields_ = [("cycle_ns", c_uint32), ("timing", TimingModel), ("version", FwVersion), ("firmware", c_uint32)]


class EthercatOption(Structure):
    _fields_ = [("interface", c_char_p), ("sync0_period_ns", c_uint32), ("sync0_shift_ns", ctypes.c_int32),
                ("send_cycle_ns", c_uint32), ("sync_tolerance_ns", c_uint32), ("sync_timeout_ms", c_uint32),
                ("state_timeout_ms", c_uint32), ("op_wait_timeout_ms", c_uint32), ("rt_priority", c_int),
                ("rt_cpu", c_int), ("capture_path", c_char_p)]


class EchocatOption(Structure):
    _fields_ = [("ethercat", EthercatOption), ("backend", c_enum), ("spin_ns", c_uint32), ("warmup_cycles", c_uint32)]


class SoemOption(Structure):
    _fields_ = [("ethercat", EthercatOption)]


class EthercrabOption(Structure):
    _fields_ = [("ethercat", EthercatOption), ("pdu_timeout_ms", c_uint32)]


class TwincatOption(Structure):
    _fields_ = [("server_ip", c_char_p), ("server_port", c_uint16), ("server_ams_net_id", c_char_p),
                ("client_ams_net_id", c_char_p), ("ams_port", c_uint16), ("timeout_ms", c_uint32),
                ("task_cycle_us", c_uint32), ("no_notification", c_bool)]


class RemoteOption(Structure):
    _fields_ = [("address", c_char_p), ("timeout_ms", c_uint32), ("pipeline", c_enum), ("protocol", c_uint32)]


class _LinkOptionU(Union):
    _fields_ = [("emulator", EmulatorOption), ("echocat", EchocatOption), ("soem", SoemOption),
                ("ethercrab", EthercrabOption), ("twincat", TwincatOption), ("remote", RemoteOption),
                ("reserved_", c_uint64 * 32)]


class LinkOption(Structure):
    _fields_ = [("size", c_uint32), ("kind", c_enum), ("u", _LinkOptionU)]


class ClientConfig(Structure):
    _fields_ = [("size", c_uint32), ("timeout_cycles", c_uint32), ("max_inflight", c_uint32),
                ("max_resync_rounds", c_uint32), ("low_latency", c_bool), ("reset_resend_cycles", c_uint32),
                ("rt_priority", c_int), ("rt_cpu", c_int), ("require_supported_firmware", c_bool),
                ("close_timeout_ms", c_uint32), ("protocol", c_uint32)]


class Response(Structure):
    _fields_ = [("num_devices", c_uint16), ("data", c_uint8 * MAX_DEVICES), ("outcome", c_uint8 * MAX_DEVICES)]


class ClientStats(Structure):
    _fields_ = [(n, c_uint64) for n in (
        "sent", "completed", "failed", "resyncs", "resets", "retransmits", "bus_cpu_ns", "bus_cycles",
        "device_resets", "reinits", "unknown_outcomes", "second_master", "device_timeouts")]


class ClientDeviceStatus(Structure):
    _fields_ = [("resets", c_uint32), ("reinits", c_uint32), ("state", c_enum), ("reserved_", c_uint32),
                ("executed", c_uint64), ("not_executed", c_uint64), ("unknown", c_uint64),
                ("aways", c_uint64)]


class LinkStats(Structure):
    _fields_ = [("cycles", c_uint64), ("stale_cycles", c_uint64), ("lost_cycles", c_uint64),
                ("measured", c_uint32), ("reserved_", c_uint32)] + [(n, c_uint64) for n in (
                    "phase_excursions", "worst_phase_deviation_ns", "exchanges", "exchange_ns_total", "worst_exchange_ns",
                    "dc_sample_host_ns", "dc_sample_time_ns")]


class LinkStatus(Structure):
    _fields_ = [("num_devices", c_uint16), ("state", c_uint8 * MAX_DEVICES), ("al_state", c_uint8 * MAX_DEVICES),
                ("recoveries", c_uint64), ("measured", c_uint32), ("device_recoveries", c_uint32 * MAX_DEVICES)]


class DeviceCounters(Structure):
    _fields_ = [(n, c_uint64) for n in (
        "received", "executed", "deduplicated", "dropped", "seq_mismatch", "resets", "errors")]


class DeviceFault(Structure):
    _fields_ = [("drop_next", c_uint32), ("freeze", c_bool), ("invalidate_rx", c_uint32)]


class ExecEntry(Structure):
    _fields_ = [("index", c_uint32), ("tag", c_uint32), ("boot", c_uint16), ("seq", c_uint8), ("cmd", c_uint8),
                ("result", c_uint8), ("reserved", c_uint8 * 3)]


class OutputState(Structure):
    _fields_ = [
        ("phase", c_uint8 * NUM_TRANSDUCERS), ("intensity", c_uint8 * NUM_TRANSDUCERS),
        ("pattern_bank", c_uint8), ("pattern_emission_type", c_uint8), ("pattern_divider", c_uint16),
        ("pattern_size", c_uint32), ("pattern_rep", c_uint16), ("transition_pending", c_bool),
        ("modulation_bank", c_uint8), ("modulation_size", c_uint32), ("modulation_divider", c_uint16),
        ("modulation_rep", c_uint16), ("modulation_transition_pending", c_bool), ("modulation_cursor", c_uint32),
        ("modulation", c_uint8), ("modulation_buffer", c_uint8 * OUTPUT_MOD_SAMPLES), ("silencer_flag", c_uint8),
        ("silencer_update_rate_intensity", c_uint16), ("silencer_update_rate_phase", c_uint16),
        ("silencer_completion_steps_intensity", c_uint16), ("silencer_completion_steps_phase", c_uint16),
        ("pulse_width_table", c_uint16 * 256), ("force_fan", c_bool), ("gpio_in", c_uint8),
        ("gpio_out", c_uint64 * 4), ("fpga_state", c_uint8), ("error_detail", c_uint8)]


class DevicePose(Structure):
    _fields_ = [("pos", c_float * 3), ("rot", c_float * 4)]


class Drive(Structure):
    _fields_ = [("phase", c_uint8), ("intensity", c_uint8)]


class Command(Structure):
    _fields_ = [("cmd", c_uint8), ("len", c_uint16), ("payload", c_uint8 * PAYLOAD_BYTES)]


class Transition(Structure):
    _fields_ = [("mode", c_enum), ("value", c_uint64), ("margin_ns", c_uint32)]


class PatternStm(Structure):
    _fields_ = [("drives", POINTER(Drive)), ("size", c_size_t), ("divider", c_uint16), ("rep", c_uint16),
                ("bank", c_uint8), ("transition", Transition), ("later", c_bool), ("compression", c_int)]


class ControlPoint(Structure):
    _fields_ = [("pos", c_float * 3), ("phase_offset", c_uint8)]


class FociStm(Structure):
    _fields_ = [("points", POINTER(ControlPoint)), ("intensities", POINTER(c_uint8)), ("size", c_size_t),
                ("num_foci", c_uint8), ("divider", c_uint16), ("rep", c_uint16), ("bank", c_uint8),
                ("transition", Transition), ("later", c_bool)]


class Modulation(Structure):
    _fields_ = [("data", POINTER(c_uint8)), ("size", c_size_t), ("divider", c_uint16), ("rep", c_uint16),
                ("bank", c_uint8), ("transition", Transition), ("later", c_bool)]


class Gain(Structure):
    _fields_ = [("kind", c_enum), ("pos", c_float * 3), ("dir", c_float * 3), ("theta", c_float),
                ("intensity", c_uint8), ("phase_offset", c_uint8)]


class FrameBuffer(Structure):
    _fields_ = [("num_devices", c_size_t), ("cmds", c_uint8 * MAX_DEVICES),
                ("payloads", (c_uint8 * PAYLOAD_BYTES) * MAX_DEVICES)]


class Frame(Structure):
    _fields_ = [("cmd", c_uint8), ("len", c_uint16), ("payload", c_uint8 * PAYLOAD_BYTES),
                ("device_cmds", POINTER(c_uint8)), ("device_payloads", POINTER(c_uint8))]


#: Every mirrored struct and its C name (tests/test_layout.py compiles the C side).
MIRRORS: dict[str, type[ctypes.Structure]] = {
    "autd3_fw_version_t": FwVersion, "autd3_timing_model_t": TimingModel,
    "autd3_emulator_option_t": EmulatorOption, "autd3_ethercat_option_t": EthercatOption,
    "autd3_echocat_option_t": EchocatOption, "autd3_soem_option_t": SoemOption,
    "autd3_ethercrab_option_t": EthercrabOption, "autd3_twincat_option_t": TwincatOption,
    "autd3_remote_option_t": RemoteOption, "autd3_link_option_t": LinkOption,
    "autd3_client_config_t": ClientConfig, "autd3_response_t": Response, "autd3_client_stats_t": ClientStats,
    "autd3_client_device_status_t": ClientDeviceStatus, "autd3_link_stats_t": LinkStats,
    "autd3_link_status_t": LinkStatus, "autd3_device_counters_t": DeviceCounters,
    "autd3_device_fault_t": DeviceFault, "autd3_exec_entry_t": ExecEntry, "autd3_output_state_t": OutputState,
    "autd3_device_pose_t": DevicePose, "autd3_drive_t": Drive, "autd3_command_t": Command,
    "autd3_transition_t": Transition, "autd3_pattern_stm_t": PatternStm, "autd3_control_point_t": ControlPoint,
    "autd3_foci_stm_t": FociStm, "autd3_modulation_t": Modulation, "autd3_gain_t": Gain,
    "autd3_frame_buffer_t": FrameBuffer, "autd3_frame_t": Frame,
}

P = POINTER
_PROTOS: dict[str, tuple[Any, list[Any]]] = {
    # version.h / error.h
    "autd3_version": (c_uint, []),
    "autd3_version_string": (c_char_p, []),
    "autd3_strerror": (c_char_p, [c_err]),
    "autd3_err_name": (c_char_p, [c_err]),
    "autd3_last_error": (c_char_p, []),
    "autd3_dev_err_message": (c_char_p, [c_uint8]),
    "autd3_cmd_name": (c_char_p, [c_uint8]),
    # geometry.h
    "autd3_device_pose_at": (DevicePose, [c_float, c_float, c_float]),
    "autd3_geometry_create": (c_err, [c_size_t, P(DevicePose), P(c_void_p)]),
    "autd3_geometry_free": (None, [c_void_p]),
    "autd3_geometry_num_devices": (c_size_t, [c_void_p]),
    "autd3_geometry_num_transducers": (c_size_t, [c_void_p, c_size_t]),
    "autd3_geometry_transducer": (c_err, [c_void_p, c_size_t, c_size_t, P(c_float), P(c_float)]),
    "autd3_geometry_set_sound_speed": (c_err, [c_void_p, c_float]),
    "autd3_geometry_sound_speed": (c_float, [c_void_p]),
    # link.h / emulator.h
    "autd3_link_option_default": (LinkOption, [c_enum]),
    "autd3_link_kind_name": (c_char_p, [c_enum]),
    "autd3_link_kind_available": (c_bool, [c_enum]),
    "autd3_link_kind": (c_enum, [c_void_p]),
    "autd3_link_stats_sized": (None, [c_void_p, P(LinkStats), c_size_t]),
    "autd3_link_check_state_sized": (c_err, [c_void_p, P(LinkStatus), c_size_t]),
    "autd3_link_diagnostics": (c_size_t, [c_void_p, c_char_p, c_size_t]),
    "autd3_link_device_resets": (c_uint32, [c_void_p, c_uint16]),
    "autd3_timing_model_default": (TimingModel, []),
    "autd3_timing_model_pessimistic": (TimingModel, []),
    "autd3_timing_model_ideal": (TimingModel, []),
    "autd3_timing_model_parse": (c_err, [c_char_p, P(TimingModel)]),
    "autd3_emulator_inject": (c_err, [c_void_p, c_uint16, P(DeviceFault)]),
    "autd3_emulator_power_cycle": (c_err, [c_void_p, c_uint16]),
    "autd3_emulator_counters_sized": (c_err, [c_void_p, c_uint16, P(DeviceCounters), c_size_t]),
    "autd3_emulator_log_drain": (c_err, [c_void_p, c_uint16, P(ExecEntry), c_size_t, P(c_size_t), P(c_uint64)]),
    "autd3_emulator_output": (c_err, [c_void_p, c_uint16, P(OutputState)]),
    "autd3_emulator_outputs": (c_err, [c_void_p, P(c_void_p)]),
    "autd3_emulator_outputs_read": (c_err, [c_void_p, c_uint16, P(OutputState)]),
    "autd3_emulator_outputs_release": (None, [c_void_p]),
    # client.h
    "autd3_client_config_init": (None, [P(ClientConfig), c_size_t]),
    "autd3_client_config_validate": (c_err, [P(ClientConfig)]),
    "autd3_response_check": (c_err, [P(Response), P(c_int), P(c_uint8)]),
    "autd3_client_open": (c_err, [c_void_p, P(LinkOption), P(ClientConfig), P(c_void_p)]),
    "autd3_client_send": (c_err, [c_void_p, P(Frame), P(c_void_p)]),
    "autd3_request_wait": (c_err, [c_void_p, P(Response)]),
    "autd3_request_wait_for": (c_err, [c_void_p, c_uint32, P(Response)]),
    "autd3_request_poll": (c_err, [c_void_p, P(Response)]),
    "autd3_request_detach": (c_err, [c_void_p]),
    "autd3_client_send_checked": (c_err, [c_void_p, P(Frame), P(Response)]),
    "autd3_client_read_firmware_version": (c_err, [c_void_p, P(FwVersion)]),
    "autd3_client_read_error_detail": (c_err, [c_void_p, P(c_uint8)]),
    "autd3_client_read_fpga_state": (c_err, [c_void_p, P(c_uint8)]),
    "autd3_client_protocol": (c_enum, [c_void_p]),
    "autd3_client_num_devices": (c_size_t, [c_void_p]),
    "autd3_client_link": (c_void_p, [c_void_p]),
    "autd3_client_stats_sized": (None, [c_void_p, P(ClientStats), c_size_t]),
    "autd3_client_device_resets": (c_uint32, [c_void_p, c_uint16]),
    "autd3_client_device_status_sized": (c_err, [c_void_p, c_uint16, P(ClientDeviceStatus), c_size_t]),
    "autd3_client_close": (c_err, [c_void_p]),
    # proto.h
    "autd3_frame_simple": (Frame, [c_uint8]),
    "autd3_frame_xor_hash": (c_err, [P(Frame), c_uint16, P(c_uint8), c_size_t]),
    "autd3_frame_xor_hash_bench": (c_err, [P(Frame), c_uint16, c_size_t]),
    # command.h
    "autd3_cmd_write_pattern_fused": (c_err, [P(Command), c_uint8, P(Drive), c_uint16, P(Transition)]),
    "autd3_cmd_silencer_fixed_update_rate": (c_err, [P(Command), c_uint16, c_uint16]),
    "autd3_cmd_silencer_fixed_completion_time": (c_err, [P(Command), c_uint64, c_uint64, c_bool]),
    "autd3_cmd_silencer_default": (c_err, [P(Command)]),
    "autd3_cmd_silencer_disable": (c_err, [P(Command)]),
    "autd3_cmd_phase_correction": (c_err, [P(Command), P(c_uint8)]),
    "autd3_cmd_output_mask": (c_err, [P(Command), P(c_bool)]),
    "autd3_cmd_force_fan": (c_err, [P(Command), c_bool]),
    "autd3_pattern_stm_commands": (c_err, [P(PatternStm), P(Command), c_size_t, P(c_size_t)]),
    "autd3_foci_stm_commands": (c_err, [P(FociStm), c_void_p, c_size_t, P(Command), c_size_t, P(c_size_t)]),
    "autd3_modulation_commands": (c_err, [P(Modulation), P(Command), c_size_t, P(c_size_t)]),
    "autd3_modulation_static": (c_err, [c_uint8, P(c_uint8), P(Modulation)]),
    "autd3_modulation_sine": (c_err, [c_float, c_uint16, c_uint8, c_uint8, P(c_uint8), c_size_t, P(Modulation)]),
    "autd3_frame_buffer_set": (c_err, [P(FrameBuffer), c_size_t, P(Command)]),
    "autd3_frame_buffer_frame": (c_err, [P(FrameBuffer), P(Frame)]),
    "autd3_frame_broadcast": (c_err, [P(Command), P(Frame)]),
    "autd3_gain_null": (Gain, []),
    "autd3_gain_focus": (Gain, [c_float, c_float, c_float]),
    "autd3_gain_plane": (Gain, [c_float, c_float, c_float]),
    "autd3_gain_bessel": (Gain, [c_float, c_float, c_float, c_float, c_float, c_float, c_float]),
    "autd3_gain_uniform": (Gain, [c_uint8, c_uint8]),
    "autd3_gain_calc": (c_err, [P(Gain), c_void_p, c_size_t, P(Drive)]),
    "autd3_gain_frame": (c_err, [P(Gain), c_void_p, P(FrameBuffer), P(Frame)]),
}


class LibraryNotFoundError(OSError):
    """The libautd3 shared library could not be found or loaded (the message lists where it looked)."""


def _candidates() -> list[str]:
    env = os.environ.get("LIBAUTD3_LIBRARY")
    if env:
        return [env]  # an explicit choice is never second-guessed
    here = Path(__file__).resolve().parent / "_lib"
    if sys.platform == "win32":
        names = ["autd3.dll", "libautd3.dll"]
    elif sys.platform == "darwin":
        names = ["libautd3.dylib"]
    else:
        names = ["libautd3.so"]
    out = [str(here / n) for n in names]
    if here.is_dir():  # a versioned soname copied into the wheel
        out += sorted(str(p) for p in here.glob("libautd3.so.*"))
    found = ctypes.util.find_library("autd3")
    if found:
        out.append(found)
    return out


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library with every prototype set; LibraryNotFoundError if none loads."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if not os.path.isabs(path) or os.path.exists(path):
                try:
                    # ctypes.CDLL releases the GIL during every call: blocking waits let other threads run.
                    cand = ctypes.CDLL(path)
                except OSError as e:
                    tried.append(f"{path}: {e}")
                    continue
                missing = [n for n in _PROTOS if not hasattr(cand, n)]
                if missing:
                    tried.append(f"{path}: not a compatible libautd3 (missing {', '.join(missing[:4])})")
                    continue
                for name, (res, args) in _PROTOS.items():
                    fn = getattr(cand, name)
                    fn.restype = res
                    fn.argtypes = args
                _lib = cand
                return cand
            tried.append(f"{path}: no such file")
        raise LibraryNotFoundError(
            "libautd3 shared library not found; set LIBAUTD3_LIBRARY to its path or reinstall the package.\n  tried: "
            + ("\n  tried: ".join(tried) if tried else "(nothing)"))


def bare(name: str) -> Any:
    """`name` without ctypes' argument conversion (its result type kept), for the calls made once per
    command while streaming (send, wait, check), whose arguments the binding builds itself: a
    c_void_p, byref() of the struct the prototype names, an int below 2**31. The conversion is about
    half of a ctypes call's cost; a wrong argument here is the binding's bug, never a user's."""
    lb = lib()
    fn = lb._FuncPtr((name, lb))
    fn.restype = _PROTOS[name][0]
    return fn


def last_error() -> str:
    """The calling thread's detailed message (read right after the failing call, in the same thread)."""
    m = lib().autd3_last_error()
    return m.decode("utf-8", "replace") if m else ""
