// Error codes (error.h's table), the exception that carries them, and the library's names.
using System;
using Autd3.Native;

namespace Autd3
{
    /// <summary>autd3_err_t: the values of error.h's AUTD3_ERR_MAP (test_csharp checks every one against autd3_err_name).</summary>
    public enum ErrorCode
    {
        Ok = 0,
        InvalidArgument = -1, InvalidOption = -2, InvalidConfig = -3, DeviceCountRange = -4, GeometryMismatch = -5,
        UnknownLink = -6, NotBuilt = -7, Nomem = -8, Payload = -9,
        NoInterface = -20, Permission = -21, NoDevice = -22, NotAutd = -23, DeviceCountMismatch = -24, SyncTimeout = -25,
        StateTimeout = -26, Io = -27, Connect = -28, Protocol = -29, Version = -30, Remote = -31, Ads = -32,
        PeerClosed = -33, Link = -34, SecondMaster = -35,
        Timeout = -40, Device = -41, Closed = -42, Pending = -43, Busy = -44, DeviceReset = -45, OutcomeUnknown = -46,
        InvalidHandle = -47,
        Internal = -99,
    }

    /// <summary>A failed libautd3 call: the code, the detailed message of autd3_last_error() read right after it on
    /// the calling thread, and for a request the per-device outcomes.</summary>
    public class AutdException : Exception
    {
        public ErrorCode Code { get; }
        /// <summary>error.h's name of the code, e.g. "TIMEOUT".</summary>
        public string Name { get; }
        /// <summary>Per-device outcomes of a failed request or send; null otherwise.</summary>
        public Response Response { get; }
        public AutdException(ErrorCode code, string message, Response response = null)
            : base(Lib.Str(Lib.autd3_err_name((int)code)) + ": " + message)
        {
            Code = code;
            Name = Lib.Str(Lib.autd3_err_name((int)code));
            Response = response;
        }

        /// <summary>The exception for `err`, with the calling thread's last error message (call right after the failing call).</summary>
        internal static AutdException Last(int err, Response response = null)
        {
            string m = Lib.Str(Lib.autd3_last_error());
            if (m.Length == 0) m = Lib.Str(Lib.autd3_strerror(err));
            return new AutdException((ErrorCode)err, m, response);
        }
        internal static void Check(int err) { if (err != 0) throw Last(err); }
    }

    /// <summary>The library, its version and its names.</summary>
    public static class Library
    {
        public static uint Version { get { return Lib.autd3_version(); } }
        public static string VersionString { get { return Lib.Str(Lib.autd3_version_string()); } }
        public static string ErrorName(ErrorCode e) { return Lib.Str(Lib.autd3_err_name((int)e)); }
        public static string ErrorMessage(ErrorCode e) { return Lib.Str(Lib.autd3_strerror((int)e)); }
        public static string CommandName(byte cmd) { return Lib.Str(Lib.autd3_cmd_name(cmd)); }
        public static string DeviceErrorMessage(byte code) { return Lib.Str(Lib.autd3_dev_err_message(code)); }
        public static string LinkKindName(LinkKind k) { return Lib.Str(Lib.autd3_link_kind_name((int)k)); }
        public static bool LinkKindAvailable(LinkKind k) { return Lib.autd3_link_kind_available((int)k); }
        public static LinkKind ParseLinkKind(string name)
        {
            int k;
            AutdException.Check(Lib.autd3_link_kind_parse(name, out k));
            return (LinkKind)k;
        }
        public static TimingModel ParseTimingModel(string s)
        {
            TimingModel t;
            AutdException.Check(Lib.autd3_timing_model_parse(s, out t));
            return t;
        }
    }

    public enum LinkKind { Emulator = 0, Echocat = 1, Soem = 2, Ethercrab = 3, Twincat = 4, Remote = 5 }
    public enum Outcome : byte { None = 0, Executed = 1, NotExecuted = 2, Unknown = 3 }
    public enum Protocol : uint { New = 0, V12 = 1, Auto = 2 }
    public enum ClientDeviceState { Ready = 0, Recovering = 1, Foreign = 2, Away = 3 }
    public enum DeviceState : byte { Unknown = 0, Op = 1, SafeOp = 2, SafeOpError = 3, Lost = 4, Other = 5 }
    public enum NicBackend { Auto = 0, AfPacket = 1, Pcap = 2 }
    public enum RemotePipeline { Auto = 0, Off = 1, On = 2 }
    public enum EmulatorFirmware : uint { New = 0, V12 = 1, Mixed = 2 }
    public enum TransitionMode { SyncIdx = 0x00, SysTime = 0x01, Gpio = 0x02, Ext = 0xF0, Immediate = 0xFF }
    public enum PatternCompression { None = 0, PhaseFull = 1, PhaseHalf = 2 }
    public enum GpioOutType
    {
        None = 0x00, BaseSignal = 0x01, Thermo = 0x02, ForceFan = 0x03, Sync = 0x10, ModBank = 0x20, ModIdx = 0x21,
        PatternBank = 0x50, PatternIdx = 0x51, IsStmMode = 0x52, SysTimeEq = 0x60, SyncDiff = 0x70, PwmOut = 0xE0, Direct = 0xF0,
    }
}
