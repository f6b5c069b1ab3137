// Link options and the client configuration as C# structs holding the C library's defaults (`Default`), with
// TimeSpan for durations. They become the C structs only for the call that needs them (ToNative), with the
// strings copied to native memory that the call's StringPool frees afterwards.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using Autd3.Native;

namespace Autd3
{
    /// <summary>Native copies of strings for one call; freed on Dispose.</summary>
    internal sealed class StringPool : IDisposable
    {
        readonly List<IntPtr> ptrs = new List<IntPtr>();
        public IntPtr Add(string s)
        {
            if (s == null) return IntPtr.Zero;
            byte[] b = Encoding.UTF8.GetBytes(s);
            IntPtr p = Marshal.AllocHGlobal(b.Length + 1);
            Marshal.Copy(b, 0, p, b.Length);
            Marshal.WriteByte(p, b.Length, 0);
            ptrs.Add(p);
            return p;
        }
        public void Dispose() { foreach (IntPtr p in ptrs) Marshal.FreeHGlobal(p); ptrs.Clear(); }
    }

    internal static class Time
    {
        public static uint Ns32(TimeSpan t) { long ns = t.Ticks * 100; return ns <= 0 ? 0u : ns >= uint.MaxValue ? uint.MaxValue : (uint)ns; }
        public static uint Ms(TimeSpan t) { double ms = Math.Ceiling(t.TotalMilliseconds); return ms <= 0 ? 0u : ms >= uint.MaxValue ? uint.MaxValue : (uint)ms; }
        public static ulong Ns64(TimeSpan t) { return t.Ticks <= 0 ? 0ul : (ulong)t.Ticks * 100ul; }
        public static TimeSpan FromNs(long ns) { return TimeSpan.FromTicks(ns / 100); }
        public static TimeSpan FromMs(uint ms) { return TimeSpan.FromMilliseconds(ms); }
    }

    /// <summary>What Client.Open and Link.Open take: one of the option structs below.</summary>
    public interface ILinkOptions
    {
        LinkKind Kind { get; }
        /// <summary>The C option (size from this mirror); strings go to `pool`.</summary>
        Native.LinkOption ToNative(StringPoolHandle pool);
    }

    /// <summary>Where ToNative puts the option's strings (native UTF-8 copies); they live until Dispose, which
    /// Client.Open and Link.Open call after the C call returned.</summary>
    public sealed class StringPoolHandle : IDisposable
    {
        internal readonly StringPool Pool = new StringPool();
        public void Dispose() { Pool.Dispose(); }
    }

    internal static class LinkOptionNative
    {
        /// <summary>A struct built with `new` holds zeros, not the C defaults (RtCpu 0 pins the bus thread to CPU 0
        /// where the default is -1): refused, as the C library refuses a struct without its `size` (docs/bindings.md).</summary>
        public static void RequireDefault(bool fromDefault, string type, ErrorCode code = ErrorCode.InvalidOption)
        {
            if (!fromDefault)
                throw new AutdException(code, type + ": start from " + type + ".Default (the library's defaults), not new " + type + "()");
        }
        /// <summary>The library's defaults for the kind with `size` = what this mirror knows of the kind's member.</summary>
        public static Native.LinkOption Start(LinkKind k, Type member)
        {
            Native.LinkOption o = Lib.autd3_link_option_default((int)k);
            o.size = (uint)(Marshal.OffsetOf(typeof(Native.LinkOption), "u").ToInt32() + Marshal.SizeOf(member));
            return o;
        }
    }

    /// <summary>The EtherCAT options common to echocat, SOEM and EtherCrab (link_ethercat.h).</summary>
    public struct EthercatOptions
    {
        /// <summary>Adapter name; null or "auto": the first adapter whose slaves are all AUTD3.</summary>
        public string Interface;
        public TimeSpan Sync0Period, Sync0Shift, SendCycle, SyncTolerance, SyncTimeout, StateTimeout, OpWaitTimeout;
        public int RtPriority, RtCpu;
        public string CapturePath;
        bool fromDefault;
        public static EthercatOptions Default { get { return From(Lib.autd3_ethercat_option_default()); } }
        internal static EthercatOptions From(EthercatOption e)
        {
            return new EthercatOptions
            {
                Interface = null, Sync0Period = Time.FromNs(e.sync0_period_ns), Sync0Shift = Time.FromNs(e.sync0_shift_ns),
                SendCycle = Time.FromNs(e.send_cycle_ns), SyncTolerance = Time.FromNs(e.sync_tolerance_ns),
                SyncTimeout = Time.FromMs(e.sync_timeout_ms), StateTimeout = Time.FromMs(e.state_timeout_ms),
                OpWaitTimeout = Time.FromMs(e.op_wait_timeout_ms), RtPriority = e.rt_priority, RtCpu = e.rt_cpu, CapturePath = null,
                fromDefault = true,
            };
        }
        internal void Apply(ref EthercatOption e, StringPool pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "EthercatOptions");
            e.@interface = pool.Add(Interface);
            e.sync0_period_ns = Time.Ns32(Sync0Period);
            e.sync0_shift_ns = (int)(Sync0Shift.Ticks * 100);
            e.send_cycle_ns = Time.Ns32(SendCycle);
            e.sync_tolerance_ns = Time.Ns32(SyncTolerance);
            e.sync_timeout_ms = Time.Ms(SyncTimeout);
            e.state_timeout_ms = Time.Ms(StateTimeout);
            e.op_wait_timeout_ms = Time.Ms(OpWaitTimeout);
            e.rt_priority = RtPriority;
            e.rt_cpu = RtCpu;
            e.capture_path = pool.Add(CapturePath);
        }
    }

    /// <summary>The in-process emulator (emulator.h).</summary>
    public struct EmulatorOptions : ILinkOptions
    {
        public TimeSpan Cycle;
        public Native.TimingModel Timing;
        public FwVersion Version;
        public EmulatorFirmware Firmware;
        bool fromDefault;
        public static EmulatorOptions Default
        {
            get
            {
                EmulatorOption e = Lib.autd3_link_option_default((int)LinkKind.Emulator).u.emulator;
                return new EmulatorOptions { Cycle = Time.FromNs(e.cycle_ns), Timing = e.timing, Version = e.version, Firmware = (EmulatorFirmware)e.firmware, fromDefault = true };
            }
        }
        public LinkKind Kind { get { return LinkKind.Emulator; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "EmulatorOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(EmulatorOption));
            o.u.emulator.cycle_ns = Time.Ns32(Cycle);
            o.u.emulator.timing = Timing;
            o.u.emulator.version = Version;
            o.u.emulator.firmware = (uint)Firmware;
            return o;
        }
    }

    /// <summary>echocat, the AUTD3-dedicated EtherCAT master (link_echocat.h).</summary>
    public struct EchocatOptions : ILinkOptions
    {
        public EthercatOptions Ethercat;
        public NicBackend Backend;
        public uint SpinNs, WarmupCycles;
        bool fromDefault;
        public static EchocatOptions Default
        {
            get
            {
                EchocatOption e = Lib.autd3_link_option_default((int)LinkKind.Echocat).u.echocat;
                return new EchocatOptions { Ethercat = EthercatOptions.From(e.ethercat), Backend = (NicBackend)e.backend, SpinNs = e.spin_ns, WarmupCycles = e.warmup_cycles, fromDefault = true };
            }
        }
        public LinkKind Kind { get { return LinkKind.Echocat; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "EchocatOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(EchocatOption));
            Ethercat.Apply(ref o.u.echocat.ethercat, pool.Pool);
            o.u.echocat.backend = (int)Backend;
            o.u.echocat.spin_ns = SpinNs;
            o.u.echocat.warmup_cycles = WarmupCycles;
            return o;
        }
    }

    /// <summary>SOEM (libautd3-link-soem, GPL-3.0-only; registered when opened).</summary>
    public struct SoemOptions : ILinkOptions
    {
        public EthercatOptions Ethercat;
        bool fromDefault;
        public static SoemOptions Default { get { return new SoemOptions { Ethercat = EthercatOptions.From(Lib.autd3_link_option_default((int)LinkKind.Soem).u.soem.ethercat), fromDefault = true }; } }
        public LinkKind Kind { get { return LinkKind.Soem; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "SoemOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(SoemOption));
            Ethercat.Apply(ref o.u.soem.ethercat, pool.Pool);
            return o;
        }
    }

    /// <summary>EtherCrab (libautd3-link-ethercrab; registered when opened).</summary>
    public struct EthercrabOptions : ILinkOptions
    {
        public EthercatOptions Ethercat;
        public TimeSpan PduTimeout;
        bool fromDefault;
        public static EthercrabOptions Default
        {
            get
            {
                EthercrabOption e = Lib.autd3_link_option_default((int)LinkKind.Ethercrab).u.ethercrab;
                return new EthercrabOptions { Ethercat = EthercatOptions.From(e.ethercat), PduTimeout = Time.FromMs(e.pdu_timeout_ms), fromDefault = true };
            }
        }
        public LinkKind Kind { get { return LinkKind.Ethercrab; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "EthercrabOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(EthercrabOption));
            Ethercat.Apply(ref o.u.ethercrab.ethercat, pool.Pool);
            o.u.ethercrab.pdu_timeout_ms = Time.Ms(PduTimeout);
            return o;
        }
    }

    /// <summary>TwinCAT over ADS (link_twincat.h); ServerIp null = the local router.</summary>
    public struct TwincatOptions : ILinkOptions
    {
        public string ServerIp, ServerAmsNetId, ClientAmsNetId;
        public ushort ServerPort, AmsPort;
        public TimeSpan Timeout;
        public uint TaskCycleUs;
        public bool NoNotification;
        bool fromDefault;
        public static TwincatOptions Default
        {
            get
            {
                TwincatOption e = Lib.autd3_link_option_default((int)LinkKind.Twincat).u.twincat;
                return new TwincatOptions { ServerPort = e.server_port, AmsPort = e.ams_port, Timeout = Time.FromMs(e.timeout_ms), TaskCycleUs = e.task_cycle_us, NoNotification = e.no_notification != 0, fromDefault = true };
            }
        }
        public LinkKind Kind { get { return LinkKind.Twincat; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "TwincatOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(TwincatOption));
            o.u.twincat.server_ip = pool.Pool.Add(ServerIp);
            o.u.twincat.server_ams_net_id = pool.Pool.Add(ServerAmsNetId);
            o.u.twincat.client_ams_net_id = pool.Pool.Add(ClientAmsNetId);
            o.u.twincat.server_port = ServerPort;
            o.u.twincat.ams_port = AmsPort;
            o.u.twincat.timeout_ms = Time.Ms(Timeout);
            o.u.twincat.task_cycle_us = TaskCycleUs;
            o.u.twincat.no_notification = (byte)(NoNotification ? 1 : 0);
            return o;
        }
    }

    /// <summary>Remote (ARMT over TCP to autd3-remote-server, link_remote.h).</summary>
    public struct RemoteOptions : ILinkOptions
    {
        public string Address;
        public TimeSpan Timeout;
        public RemotePipeline Pipeline;
        public uint ProtocolVersion;
        bool fromDefault;
        public static RemoteOptions Default
        {
            get
            {
                RemoteOption e = Lib.autd3_link_option_default((int)LinkKind.Remote).u.remote;
                return new RemoteOptions { Address = Lib.Str(e.address), Timeout = Time.FromMs(e.timeout_ms), Pipeline = (RemotePipeline)e.pipeline, ProtocolVersion = e.protocol, fromDefault = true };
            }
        }
        public LinkKind Kind { get { return LinkKind.Remote; } }
        public Native.LinkOption ToNative(StringPoolHandle pool)
        {
            LinkOptionNative.RequireDefault(fromDefault, "RemoteOptions");
            Native.LinkOption o = LinkOptionNative.Start(Kind, typeof(RemoteOption));
            o.u.remote.address = pool.Pool.Add(Address);
            o.u.remote.timeout_ms = Time.Ms(Timeout);
            o.u.remote.pipeline = (int)Pipeline;
            o.u.remote.protocol = ProtocolVersion;
            return o;
        }
    }

    /// <summary>The client configuration (client.h), starting from the library's defaults.</summary>
    public struct ClientConfig
    {
        public uint TimeoutCycles, MaxInflight, MaxResyncRounds, ResetResendCycles;
        public bool LowLatency, RequireSupportedFirmware;
        public int RtPriority, RtCpu;
        public TimeSpan CloseTimeout;
        public Protocol Protocol;
        bool fromDefault;
        public static ClientConfig Default
        {
            get
            {
                Native.ClientConfig c;
                Lib.autd3_client_config_init(out c, Lib.Size<Native.ClientConfig>());
                return new ClientConfig
                {
                    TimeoutCycles = c.timeout_cycles, MaxInflight = c.max_inflight, MaxResyncRounds = c.max_resync_rounds,
                    ResetResendCycles = c.reset_resend_cycles, LowLatency = c.low_latency != 0, RequireSupportedFirmware = c.require_supported_firmware != 0,
                    RtPriority = c.rt_priority, RtCpu = c.rt_cpu, CloseTimeout = Time.FromMs(c.close_timeout_ms), Protocol = (Protocol)c.protocol,
                    fromDefault = true,
                };
            }
        }
        /// <summary>The C struct, `size` = this mirror's.</summary>
        public Native.ClientConfig ToNative()
        {
            LinkOptionNative.RequireDefault(fromDefault, "ClientConfig", ErrorCode.InvalidConfig);
            Native.ClientConfig c;
            Lib.autd3_client_config_init(out c, Lib.Size<Native.ClientConfig>());
            c.timeout_cycles = TimeoutCycles; c.max_inflight = MaxInflight; c.max_resync_rounds = MaxResyncRounds;
            c.reset_resend_cycles = ResetResendCycles; c.low_latency = (byte)(LowLatency ? 1 : 0);
            c.require_supported_firmware = (byte)(RequireSupportedFirmware ? 1 : 0); c.rt_priority = RtPriority; c.rt_cpu = RtCpu;
            c.close_timeout_ms = Time.Ms(CloseTimeout); c.protocol = (uint)Protocol;
            return c;
        }
        public void Validate() { Native.ClientConfig c = ToNative(); AutdException.Check(Lib.autd3_client_config_validate(ref c)); }
    }
}
