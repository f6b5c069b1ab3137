// The C# binding under mono (tests/CMakeLists.txt in bindings/csharp registers each mode as a ctest):
//   test_csharp.exe emulator          every wrapped call against the in-process emulator
//   test_csharp.exe echocat IFNAME    open, focus (sync and Task-based), close through echocat (autd3-netns + autd3-emu)
//   test_csharp.exe entrypoints       the DllImport entry points, one a line (csharp.exports compares them with the library)
//   test_csharp.exe remote            the Remote server API from C#: a server on loopback (run on a managed thread),
//                                     found by discovery, driven by a Remote client (in a private network namespace)
// Error paths first assert that the error happened (its code).
using System;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using Autd3;
using N = Autd3.Native;
using Lib = Autd3.Native.Lib;
using Drive = Autd3.Native.Drive;
using FwVersion = Autd3.Native.FwVersion;
using DeviceFault = Autd3.Native.DeviceFault;
using OutputState = Autd3.Native.OutputState;
using ClientStats = Autd3.Native.ClientStats;
using LinkStatus = Autd3.Native.LinkStatus;
using DeviceCounters = Autd3.Native.DeviceCounters;
using ClientDeviceStatus = Autd3.Native.ClientDeviceStatus;

static class TestCSharp
{
    static int failures;
    static void Check(bool cond, string what)
    {
        if (!cond) { Console.Error.WriteLine("CHECK failed: " + what); failures++; }
    }
    static void Throws(ErrorCode code, Action a, string what)
    {
        try { a(); Check(false, what + ": no exception"); }
        catch (AutdException e) { Check(e.Code == code && e.Message.Length > e.Name.Length + 2, what + ": got " + e.Code + " " + e.Message); }
    }

    static int Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "emulator";
        try
        {
            if (mode == "entrypoints") return EntryPoints();
            if (mode == "emulator") { Names(); Options(); Commands(); ClientEmulator(); RawLink(); CloseRace(); }
            else if (mode == "echocat") Echocat(args[1]);
            else if (mode == "remote") Remote();
            else { Console.Error.WriteLine("unknown mode " + mode); return 2; }
        }
        catch (Exception e) { Console.Error.WriteLine("unexpected: " + e); failures++; }
        if (failures != 0) { Console.Error.WriteLine("test_csharp " + mode + ": " + failures + " checks failed"); return 1; }
        Console.WriteLine("test_csharp " + mode + ": all checks passed");
        return 0;
    }

    static int EntryPoints()
    {
        foreach (MethodInfo m in typeof(Lib).GetMethods(BindingFlags.Public | BindingFlags.Static))
        {
            var d = m.GetCustomAttributes(typeof(DllImportAttribute), false).Cast<DllImportAttribute>().FirstOrDefault();
            if (d != null) Console.WriteLine((d.EntryPoint ?? m.Name) + " " + d.Value);
        }
        return 0;
    }

    static string Snake(string pascal)
    {
        var sb = new System.Text.StringBuilder();
        for (int i = 0; i < pascal.Length; i++)
        {
            if (i > 0 && char.IsUpper(pascal[i])) sb.Append('_');
            sb.Append(char.ToUpperInvariant(pascal[i]));
        }
        return sb.ToString();
    }

    static void Names()
    {
        // No delegate reaches native code: nothing in the API can make a library thread call C#.
        foreach (MethodInfo m in typeof(Lib).GetMethods(BindingFlags.Public | BindingFlags.Static))
            foreach (ParameterInfo p in m.GetParameters())
                Check(!typeof(Delegate).IsAssignableFrom(p.ParameterType), m.Name + " takes a delegate");
        // The library loaded is the one these declarations were written for: its version string is its number.
        uint v = Library.Version;
        Check(Library.VersionString == string.Format("{0}.{1}.{2}", v >> 16, (v >> 8) & 0xFF, v & 0xFF) && v > 0, "version " + Library.VersionString);
        // The enum is the C table: every code the library names is in it under the same name, and back.
        for (int code = -128; code < 0; code++)
        {
            string n = Library.ErrorName((ErrorCode)code);
            if (n == "UNKNOWN") { Check(!Enum.IsDefined(typeof(ErrorCode), code), "ErrorCode " + code + " unknown to C"); continue; }
            Check(Enum.IsDefined(typeof(ErrorCode), code) && Snake(((ErrorCode)code).ToString()) == n, "ErrorCode " + code + " = " + n);
        }
        foreach (ErrorCode e in Enum.GetValues(typeof(ErrorCode)))
            if (e != ErrorCode.Ok) Check(Library.ErrorName(e) == Snake(e.ToString()), "C name of " + e);
        Check(Library.ErrorMessage(ErrorCode.Timeout) == "timed out", "strerror");
        Check(Library.CommandName(0x03) == "CLEAR", "cmd name");
        Check(Library.DeviceErrorMessage(0x03).Length > 0, "dev err message");
        Check(Lib.Str(Lib.autd3_v12_err_message(1)).Length > 0, "v12 err message");
        Check(Library.LinkKindName(LinkKind.Echocat) == "echocat" && Library.LinkKindAvailable(LinkKind.Emulator), "link kinds");
        Check(Library.ParseLinkKind("remote") == LinkKind.Remote, "parse link kind");
        Throws(ErrorCode.UnknownLink, () => Library.ParseLinkKind("carrier-pigeon"), "bad link kind");
        Check(Library.ParseTimingModel("ideal").fifo_latency_ns == 0 && Lib.autd3_timing_model_pessimistic().fifo_latency_ns == 900000, "timing");
        Check(Lib.autd3_timing_model_default().take_on_sync0 == 1 && Lib.autd3_timing_model_ideal().take_on_sync0 == 0, "timing defaults");
        Throws(ErrorCode.InvalidOption, () => Library.ParseTimingModel("sometimes"), "bad timing");
        int fw;
        Check(Lib.autd3_emu_firmware_parse("v12", out fw) == 0 && fw == 1, "firmware parse");
    }

    static unsafe void Options()
    {
        EchocatOptions ec = EchocatOptions.Default;
        Check(ec.Ethercat.Sync0Period == TimeSpan.FromMilliseconds(1) && ec.WarmupCycles == 200, "echocat defaults");
        ec.Ethercat.Interface = "eth7";
        ec.Ethercat.Sync0Shift = TimeSpan.FromTicks(-100);
        var pool = new StringPoolHandle(); // freed at the end of the test process
        N.LinkOption n = ec.ToNative(pool);
        Check(n.kind == 1 && n.size == Lib.autd3_link_option_default(1).size, "echocat size from the mirror = C's");
        Check(Lib.Str(n.u.echocat.ethercat.@interface) == "eth7" && n.u.echocat.ethercat.sync0_shift_ns == -10000, "echocat fields");
        Check(n.u.echocat.ethercat.capture_path == IntPtr.Zero, "capture path default");
        N.EthercatOption e = n.u.echocat.ethercat;
        Check(Lib.autd3_ethercat_option_validate(ref e) == 0, "validate");
        e.sync0_period_ns = 123;
        Check(Lib.autd3_ethercat_option_validate(ref e) == (int)ErrorCode.InvalidOption, "validate bad period");
        Check(Lib.autd3_echocat_option_default().warmup_cycles == 200 && Lib.autd3_soem_option_default().ethercat.sync0_period_ns == 1000000, "C defaults");
        Check(Lib.autd3_ethercrab_option_default().pdu_timeout_ms == EthercrabOptions.Default.PduTimeout.TotalMilliseconds, "ethercrab default");
        Check(SoemOptions.Default.Kind == LinkKind.Soem && SoemOptions.Default.ToNative(pool).size == Lib.autd3_link_option_default(2).size, "soem");
        Check(EthercrabOptions.Default.ToNative(pool).size == Lib.autd3_link_option_default(3).size, "ethercrab size");
        TwincatOptions tc = TwincatOptions.Default;
        Check(tc.ServerPort == 48898 && tc.AmsPort == 301 && Lib.autd3_twincat_option_default().timeout_ms == 1000, "twincat defaults");
        tc.ServerIp = "10.1.1.1";
        N.LinkOption tn = tc.ToNative(pool);
        Check(Lib.Str(tn.u.twincat.server_ip) == "10.1.1.1" && tn.size == Lib.autd3_link_option_default(4).size, "twincat native");
        RemoteOptions ro = RemoteOptions.Default;
        Check(ro.Address == "127.0.0.1:8080" && Lib.Str(Lib.autd3_remote_option_default().address) == ro.Address, "remote defaults");
        Check(ro.ToNative(pool).size == Lib.autd3_link_option_default(5).size, "remote size");
        EmulatorOptions em = EmulatorOptions.Default;
        Check(em.Cycle == TimeSpan.FromMilliseconds(1) && em.Version.cpu_minor == 9 && Lib.autd3_emulator_option_default().cycle_ns == 1000000, "emulator defaults");
        Check(em.ToNative(pool).size == Lib.autd3_link_option_default(0).size, "emulator size");
        // A struct made with `new` holds zeros, not the library's defaults: refused before it reaches C.
        Throws(ErrorCode.InvalidOption, () => new EchocatOptions().ToNative(pool), "new EchocatOptions()");
        Throws(ErrorCode.InvalidOption, () => new EmulatorOptions().ToNative(pool), "new EmulatorOptions()");
        Throws(ErrorCode.InvalidOption, () => new RemoteOptions { Address = "x:1" }.ToNative(pool), "new RemoteOptions");
        EchocatOptions zeroEc = EchocatOptions.Default;
        zeroEc.Ethercat = new EthercatOptions();
        Throws(ErrorCode.InvalidOption, () => zeroEc.ToNative(pool), "new EthercatOptions()");
        Throws(ErrorCode.InvalidConfig, () => new ClientConfig().ToNative(), "new ClientConfig()");
        // autd3_link_option_ethercat: the EtherCAT section of an EtherCAT kind, NULL for the others.
        N.LinkOption soemN = SoemOptions.Default.ToNative(pool);
        N.EthercatOption* ecp = Lib.autd3_link_option_ethercat(ref soemN);
        Check(ecp != null && ecp->sync0_period_ns == 1000000, "ethercat section of a SOEM option");
        N.LinkOption emuN = em.ToNative(pool);
        Check(Lib.autd3_link_option_ethercat(ref emuN) == null, "no ethercat section for the emulator");

        ClientConfig cfg = ClientConfig.Default;
        Check(cfg.MaxInflight == 127 && cfg.TimeoutCycles == 10 && cfg.CloseTimeout == TimeSpan.FromSeconds(1), "client config defaults");
        Check(Lib.autd3_client_config_default().max_inflight == 127, "C by-value default");
        Check(cfg.ToNative().size == Marshal.SizeOf(typeof(N.ClientConfig)), "config size = mirror");
        cfg.Validate();
        cfg.MaxInflight = 0;
        Throws(ErrorCode.InvalidConfig, () => cfg.Validate(), "bad config");
        N.RemoteServerOption so;
        Lib.autd3_remote_server_option_init(out so, Lib.Size<N.RemoteServerOption>());
        Check(so.size == Marshal.SizeOf(typeof(N.RemoteServerOption)) && so.link.kind == 0 && so.log == IntPtr.Zero, "server option init");
        Check(Lib.autd3_remote_server_option_default().max_connections == so.max_connections, "server option default");
    }

    static unsafe void Commands()
    {
        using (Geometry geo = Geometry.Create(new[] { Geometry.PoseAt(0, 0, 0), Geometry.PoseAt(200, 0, 0) }))
        {
            Check(geo.NumDevices == 2 && geo.NumTransducers(1) == 249 && geo.NumTransducers(2) == 0, "geometry");
            float[] pos, dir;
            geo.Transducer(1, 0, out pos, out dir);
            Check(pos[0] == 200 && dir[2] == 1, "transducer");
            Throws(ErrorCode.InvalidArgument, () => geo.Transducer(5, 0, out pos, out dir), "bad transducer");
            Check(geo.SoundSpeed == 340000f, "sound speed");
            geo.SoundSpeed = 343000f;
            Check(geo.SoundSpeed == 343000f, "set sound speed");
            Throws(ErrorCode.InvalidArgument, () => geo.SoundSpeed = -1, "bad sound speed");
            Throws(ErrorCode.DeviceCountRange, () => Geometry.Create(0), "no devices");

            Check(Command.SilencerDefault().Opcode == 0x30 && Command.SilencerDisable().Opcode == 0x30, "silencer");
            Command sil = Command.SilencerFixedCompletionTime(TimeSpan.FromTicks(2500) /* 250 us: FromMilliseconds rounds to whole ms on .NET Framework / Mono */, TimeSpan.FromMilliseconds(1));
            Throws(ErrorCode.InvalidArgument, () => Command.SilencerFixedCompletionTime(TimeSpan.FromTicks(100), TimeSpan.FromMilliseconds(1)), "bad silencer");
            Command.SilencerFixedUpdateRate(256, 256);
            Throws(ErrorCode.InvalidArgument, () => Command.SilencerFixedUpdateRate(0, 0), "bad update rate");
            var drives = Enumerable.Repeat(new Drive(0x10, 0xFF), 249).ToArray();
            Check(Command.WritePattern(0, 0, drives).Opcode == 0x10, "write pattern");
            Check(Command.ConfigPattern(0, 10, 2, 0xFFFF).Opcode == 0x11, "config pattern");
            Check(Command.ChangePatternBank(1, Transition.Immediate).Opcode == 0x12 && Command.ChangePatternBank(1, Transition.Ext).Opcode == 0x12, "change bank");
            Check(Transition.SyncIdx.Mode == TransitionMode.SyncIdx && Transition.Gpio(2).Value == 2 && Transition.SysTime(TimeSpan.FromSeconds(2)).Value == 2000000000, "transitions");
            Check(Command.WritePatternFused(0, new Drive[249], 0xFFFF, Transition.Immediate).Opcode == 0x14, "fused");
            Throws(ErrorCode.InvalidArgument, () => Command.WritePatternFused(0, new Drive[249], 0, Transition.Immediate), "fused divider 0");
            Check(Command.WritePatternCompressed(0, 0, PatternCompression.PhaseFull, new byte[2 * 249]).Opcode == 0x13, "compressed");
            Check(Command.PhaseCorrection(new byte[249]).Opcode == 0x40, "phase correction");
            Check(Command.OutputMask(Enumerable.Repeat(true, 249).ToArray()).Opcode == 0x41, "output mask");
            Check(Command.WriteModulation(0, 0, Enumerable.Repeat((byte)255, 100).ToArray()).Opcode == 0x20, "write modulation");
            Check(Command.ConfigModulation(0, 10, 100, 0xFFFF).Opcode == 0x21, "config modulation");
            Check(Command.ChangeModulationBank(0, Transition.Immediate).Opcode == 0x22, "change modulation bank");
            Check(Command.WriteModulationFused(0, new byte[10], 10, 0xFFFF, Transition.Immediate).Opcode == 0x23, "modulation fused");
            ushort[] table = Command.DefaultPulseWidthTable();
            Check(table[255] == 256 && table[0] == 0 && Command.PulseWidthTable(table).Opcode == 0x42, "pulse width table");
            table[3] = 600;
            Throws(ErrorCode.InvalidArgument, () => Command.PulseWidthTable(table), "bad table");
            Check(Command.ForceFan(true).Opcode == 0x60, "force fan");
            Check(Command.EmulateGpioIn(new[] { true, false, false, false }).Opcode == 0x50, "gpio in");
            Check(Command.GpioOut(new[] { GpioOutType.BaseSignal, GpioOutType.None, GpioOutType.None, GpioOutType.None }, new ulong[4]).Opcode == 0x52, "gpio out");

            Check(Modulation.Sine(150f).Length >= 1 && Modulation.Static(200).Length == 1, "modulations");
            Throws(ErrorCode.InvalidArgument, () => Modulation.Sine(30000f), "bad sine");
            int nmod = Modulation.Custom(Enumerable.Repeat((byte)255, 2000).ToArray(), 40).Length;
            Check(nmod == 6, "custom modulation: 4 writes, config, change: " + nmod);
            Check(Stm.Pattern(Enumerable.Repeat(new Drive(1, 255), 3 * 249).ToArray(), 40).Length == 5, "pattern stm");
            Throws(ErrorCode.InvalidArgument, () => Stm.Pattern(new Drive[249], 40), "pattern stm of 1");
            var pts = new[] { Stm.Point(0, 0, 150), Stm.Point(10, 0, 150) };
            Check(Stm.Foci(geo, 0, pts, 1, 40).Length == 1, "foci stm");
            pts[1] = Stm.Point(1e7f, 0, 150);
            Throws(ErrorCode.InvalidArgument, () => Stm.Foci(geo, 0, pts, 1, 40), "foci out of range");

            Check(Frame.Simple(0x04).Raw.cmd == 0x04 && Frame.SetMode(true).Raw.cmd == 0x02, "simple frames");
            Frame fb = Frame.Broadcast(sil);
            Check(fb.Raw.device_cmds == IntPtr.Zero && fb.Raw.cmd == 0x30, "broadcast");
            Frame.XorHash(TimeSpan.Zero, new byte[] { 1, 1 });
            Throws(ErrorCode.Payload, () => Frame.XorHash(TimeSpan.Zero, new byte[700]), "xor hash too long");
            Frame.XorHashBench(64);
            byte[] tx = new byte[626];
            Lib.autd3_tx_encode(tx, 5, 0x04, null, UIntPtr.Zero);
            Check(tx[0] == 5 && tx[1] == 0x04, "tx encode");
            N.Frame v12;
            Check(Lib.autd3_v12_frame(out v12, new byte[] { 0x00, 0x00 }, (UIntPtr)2, null, UIntPtr.Zero) == 0, "v12 frame");
            Lib.autd3_v12_tx_encode(tx, 3, 0, new byte[] { 0 }, (UIntPtr)1);
            Check(tx[0] == 3, "v12 tx encode");

            using (var buf = new FrameBuffer())
            {
                buf.Set(0, sil); buf.Set(1, sil);
                Check(buf.NumDevices == 2 && buf.ToFrame().Raw.device_cmds != IntPtr.Zero, "frame buffer");
                Throws(ErrorCode.InvalidArgument, () => buf.Set(128, sil), "frame buffer bad device");
                Gain focus = Gain.Focus(90, 70, 150);
                focus.Intensity = 200; focus.PhaseOffset = 3;
                Check(focus.Calc(geo, 1)[0].intensity == 200, "gain calc");
                Throws(ErrorCode.InvalidArgument, () => focus.Calc(geo, 9), "gain bad device");
                Gain.Null().Calc(geo, 0); Gain.Plane(0, 0, 1).Calc(geo, 0); Gain.Bessel(90, 70, 0, 0, 0, 1, 0.3f).Calc(geo, 0);
                Throws(ErrorCode.InvalidArgument, () => Gain.Plane(0, 0, 0).Calc(geo, 0), "zero direction");
                Drive[] u = Gain.Uniform(10, 20).Calc(geo, 0);
                Check(u[100].phase == 10 && u[100].intensity == 20, "uniform");
                Check(focus.ToFrame(geo, buf).Raw.device_cmds != IntPtr.Zero, "gain frame");
            }
        }
    }

    static unsafe void ClientEmulator()
    {
        using (Geometry geo = Geometry.Create(2))
        {
            ClientConfig cfg = ClientConfig.Default;
            cfg.TimeoutCycles = 3; cfg.MaxResyncRounds = 1;
            EmulatorOutputs outs;
            using (Client c = Client.Open(geo, EmulatorOptions.Default, cfg))
            {
                Check(c.IsOpen && c.NumDevices == 2 && c.Protocol == Protocol.New, "client");
                outs = c.Link.Outputs();
                FwVersion[] fw = c.FirmwareVersions();
                Check(fw.Length == 2 && fw[1].cpu_minor == 9, "firmware versions");
                Check(c.ErrorDetails().Length == 2 && c.ErrorDetails()[0] == 0 && c.FpgaStates().Length == 2, "reads");

                using (var buf = new FrameBuffer())
                {
                    Response r = c.SendChecked(Gain.Focus(90, 70, 150).ToFrame(geo, buf));
                    Check(r.AllExecuted && r.NumDevices == 2 && r.Outcome(1) == Outcome.Executed && r.Outcome(7) == Outcome.None && r.Data(0) == 0, "send checked");
                    r.Check();
                    OutputState st = c.Link.Output(1);
                    Check(st.intensity[17] == 255, "emitting");
                }
                // A device error: XorHash whose data does not XOR to 0.
                try { c.SendChecked(Frame.XorHash(TimeSpan.Zero, new byte[] { 1, 2 })); Check(false, "device error not raised"); }
                catch (AutdException e) { Check(e.Code == ErrorCode.Device && e.Response != null && e.Response.Data(0) == 0x03, "device error " + e.Message); }

                Frame nop = Frame.Simple(0x04);
                using (Request r1 = c.Send(nop))
                {
                    Check(r1.Wait().AllExecuted && !r1.Valid, "wait");
                    Throws(ErrorCode.InvalidHandle, () => r1.Wait(), "wait twice");
                }
                Response w = c.Send(nop).WaitFor(TimeSpan.FromSeconds(5));
                Check(w != null && w.AllExecuted, "wait for");
                Request r3 = c.Send(nop);
                Response p = null;
                for (int i = 0; i < 5000 && p == null; i++) { p = r3.Poll(); if (p == null) Thread.Sleep(1); }
                Check(p != null && p.AllExecuted, "poll");
                Request r4 = c.Send(nop);
                r4.Detach();
                Throws(ErrorCode.InvalidHandle, () => r4.Detach(), "detach twice");
                c.Send(nop).Dispose();
                c.SendDetached(nop);

                // Task-based: many in flight, completed by the client's managed completion thread.
                var tasks = Enumerable.Range(0, 50).Select(i => c.SendAsync(nop)).ToArray();
                Check(Task.WaitAll(tasks, TimeSpan.FromSeconds(20)) && tasks.All(t => t.Result.AllExecuted), "SendAsync x50");
                // Continuations never run on the completion thread (RunContinuationsAsynchronously): even one that
                // asks to run synchronously (ExecuteSynchronously would run it on the completing thread otherwise).
                Task<string> where = c.SendAsync(nop).ContinueWith(t => Thread.CurrentThread.Name ?? "", TaskContinuationOptions.ExecuteSynchronously);
                Check(where.Wait(5000) && where.Result != "autd3 completion", "continuation off the completion thread: " + where.Result);
                Check(AsyncFocus(c, geo).Wait(10000) , "await SendAsync");

                // Per-device outcomes of a failed request: device 1 frozen never acks (and never confirms the Reset:
                // OUTCOME_UNKNOWN, or TIMEOUT), device 0 executed it.
                LinkView link = c.Link;
                Check(link.Kind == LinkKind.Emulator && link.NumDevices == 2, "link view");
                link.Inject(1, new DeviceFault { freeze = 1 });
                Task<Response> failing = c.SendAsync(nop);
                try { failing.Wait(10000); Check(false, "frozen device: no error"); }
                catch (AggregateException ae)
                {
                    var e = ae.InnerException as AutdException;
                    Check(e != null && (e.Code == ErrorCode.Timeout || e.Code == ErrorCode.OutcomeUnknown) && e.Message.Contains("device 1") && e.Response != null,
                          "frozen device: TIMEOUT or OUTCOME_UNKNOWN naming device 1, with outcomes; got " + ae.InnerException);
                    if (e != null && e.Response != null)
                        Check(e.Response.Outcome(0) == Outcome.Executed && e.Response.Outcome(1) != Outcome.Executed, "per-device outcomes");
                }
                link.Inject(1, new DeviceFault());
                Thread.Sleep(200);

                ClientStats s = c.Stats;
                Check(s.sent > 0 && s.completed > 0 && s.failed >= 1, "client stats");
                Check(c.DeviceStatus(0).state == (int)ClientDeviceState.Ready, "device status");
                Throws(ErrorCode.InvalidArgument, () => c.DeviceStatus(7), "bad device status");
                c.DeviceResets(1);
                Check(link.Stats.cycles > 0 && link.DeviceResets(0) == 0, "link stats");
                // the emulator link times its exchanges (bit 0x08) and measures no phase (bit 0x04)
                Check(link.Stats.Measures(0x08) && link.Stats.exchanges > 0 && link.Stats.worst_exchange_ns >= link.Stats.MeanExchangeNs
                      && !link.Stats.Measures(0x04), "link stats: exchanges, no phase");
                Check(link.CheckState().num_devices == 2, "check state");
                link.Diagnostics();
                Check(link.Counters(0).executed > 0, "counters");
                Throws(ErrorCode.InvalidArgument, () => link.Counters(9), "bad counters");
                Check(link.DrainLog(0, 64).Length > 0, "log");
                // The unsized entry points (the first ABI's) agree with the sized ones the binding uses.
                IntPtr rawClient = Lib_client(c), rawLink = Lib.autd3_client_link(rawClient);
                N.LinkStats raw;
                Lib.autd3_link_stats(rawLink, out raw);
                Check(raw.cycles > 0, "exported link stats");
                ClientStats cs0;
                Lib.autd3_client_stats(rawClient, out cs0);
                Check(cs0.sent > 0 && cs0.sent <= c.Stats.sent, "unsized client stats");
                LinkStatus ls0;
                Check(Lib.autd3_link_check_state(rawLink, out ls0) == 0 && ls0.num_devices == 2, "unsized check state");
                DeviceCounters dc0;
                Check(Lib.autd3_emulator_counters(rawLink, 0, out dc0) == 0 && dc0.executed > 0, "unsized counters");
                ClientDeviceStatus ds0;
                Check(Lib.autd3_client_device_status(rawClient, 0, out ds0) == 0 && ds0.state == (int)ClientDeviceState.Ready, "unsized device status");
                // A power cycle reaches the client as a reset of that device (its counter moves), and it is
                // re-established alone.
                uint resetsBefore = c.DeviceResets(1);
                link.PowerCycle(1);
                for (int i = 0; i < 500 && c.DeviceResets(1) == resetsBefore; i++) { c.SendDetached(nop); Thread.Sleep(2); }
                Check(c.DeviceResets(1) > resetsBefore, "power cycle seen as a device reset");
                for (int i = 0; i < 500 && c.DeviceStatus(1).state != (int)ClientDeviceState.Ready; i++) Thread.Sleep(2);
                Check(c.DeviceStatus(1).state == (int)ClientDeviceState.Ready && c.SendChecked(nop).AllExecuted, "re-established after the power cycle");
                c.Close();
                Check(!c.IsOpen, "closed");
                Throws(ErrorCode.Closed, () => c.Send(nop), "send after close");
                Throws(ErrorCode.Closed, () => { var k = link.Kind; }, "a LinkView after its client closed");
                Throws(ErrorCode.Closed, () => { var n = c.NumDevices; }, "NumDevices after close");
            }
            using (outs) { OutputState after = outs.Read(1); Check(after.intensity[17] == 0, "close silenced the devices"); }
            // Dispose alone silences too.
            using (var buf = new FrameBuffer())
            {
                Client c2 = Client.Open(geo, EmulatorOptions.Default);
                EmulatorOutputs o2 = c2.Link.Outputs();
                c2.SendChecked(Gain.Focus(90, 70, 150).ToFrame(geo, buf));
                OutputState before = o2.Read(0);
                Check(before.intensity[0] == 255, "emitting before Dispose");
                c2.Dispose();
                OutputState after2 = o2.Read(0);
                Check(after2.intensity[0] == 0 && c2.LastCloseError == null, "Dispose silenced the array");
                o2.Dispose();
            }
        }
    }
    static IntPtr Lib_client(Client c)
    {
        object gate = typeof(Client).GetField("gate", BindingFlags.NonPublic | BindingFlags.Instance).GetValue(c);
        return (IntPtr)gate.GetType().GetProperty("Raw", BindingFlags.Public | BindingFlags.Instance).GetValue(gate);
    }

    /// <summary>Dispose on one thread while others send: every call either works or throws AutdException (Closed
    /// once closed) — never a crash or a hang; repeated, so a window between the binding's check and the C call
    /// would show.</summary>
    static void CloseRace()
    {
        using (Geometry geo = Geometry.Create(1))
        {
            int closedSeen = 0, otherErrors = 0, sent = 0;
            for (int round = 0; round < 20; round++)
            {
                Client c = Client.Open(geo, EmulatorOptions.Default);
                var go = new ManualResetEventSlim(false);
                var threads = Enumerable.Range(0, 3).Select(k => new Thread(() =>
                {
                    go.Wait();
                    Frame nop = Frame.Simple(0x04);
                    for (int i = 0; i < 200; i++)
                    {
                        try
                        {
                            if (k == 0) c.SendDetached(nop);
                            else if (k == 1) { using (Request r = c.Send(nop)) { } }
                            else { var st = c.Stats; var lk = c.Link.Stats; }
                            Interlocked.Increment(ref sent);
                        }
                        catch (AutdException e)
                        {
                            if (e.Code == ErrorCode.Closed) { Interlocked.Increment(ref closedSeen); return; }
                            Interlocked.Increment(ref otherErrors);
                        }
                    }
                })).ToList();
                threads.ForEach(t => t.Start());
                go.Set();
                Thread.Sleep(round % 5);
                c.Dispose();
                Check(threads.All(t => t.Join(10000)), "a sender hung after Dispose");
            }
            Check(sent > 0 && closedSeen > 0, "close race: calls ran (" + sent + ") and some met the closed client (" + closedSeen + ")");
            Check(otherErrors == 0, "close race: only Closed errors, got " + otherErrors + " others");
        }
    }
    static async Task AsyncFocus(Client c, Geometry geo)
    {
        using (var buf = new FrameBuffer())
        {
            foreach (Command m in Modulation.Sine(150f)) await c.SendAsync(Frame.Broadcast(m));
            Response r = await c.SendAsync(Gain.Focus(90, 70, 150).ToFrame(geo, buf));
            Check(r.AllExecuted, "async focus");
        }
    }

    static void RawLink()
    {
        using (Geometry geo = Geometry.Create(1))
        using (Link l = Link.Open(EmulatorOptions.Default, geo))
        {
            l.WaitNextCycle();
            byte[] tx = new byte[626], rx = new byte[2];
            bool fresh = false;
            for (int i = 0; i < 10; i++) fresh |= l.Cycle(tx, rx);
            Check(fresh && l.View.Stats.cycles >= 10, "raw link");
            var dv = new bool[1];
            bool allValid = false;
            for (int i = 0; i < 10 && !allValid; i++) allValid = l.Cycle(tx, rx, dv);
            Check(allValid && dv[0], "per-device validity (autd3_link_cycle_devices)");
            try { l.Cycle(new byte[10], rx); Check(false, "short tx"); } catch (ArgumentException) { }
            try { l.Cycle(tx, rx, new bool[3]); Check(false, "devValid of the wrong length"); } catch (ArgumentException) { }
        }
    }

    /// <summary>The server API: an emulator-backed server on 127.0.0.1 (any port), advertised and found by
    /// discovery, run on a managed thread (its log goes to stderr: no callback into C#), driven by a Remote client,
    /// stopped, its counters read. Run in a private namespace with multicast on loopback (run.sh remote).</summary>
    static unsafe void Remote()
    {
        N.RemoteServerOption so;
        Lib.autd3_remote_server_option_init(out so, Lib.Size<N.RemoteServerOption>());
        var pool = new StringPoolHandle();
        N.LinkOption emuN = EmulatorOptions.Default.ToNative(pool);
        IntPtr listen = Marshal.StringToHGlobalAnsi("127.0.0.1:0"), inst = Marshal.StringToHGlobalAnsi("csharp-test");
        so.listen = listen; so.link = emuN; so.advertise = 1; so.advertise_instance = inst;
        IntPtr srv;
        Check(Lib.autd3_remote_server_create(ref so, out srv) == 0, "server create: " + Lib.Str(Lib.autd3_last_error()));
        if (srv == IntPtr.Zero) return;
        ushort port = Lib.autd3_remote_server_port(srv);
        Check(port != 0, "server port");
        int runResult = -1;
        var runner = new Thread(() => { runResult = Lib.autd3_remote_server_run(srv); }) { Name = "remote server" };
        runner.Start();
        var found = new N.RemoteFound[8];
        UIntPtr nfound = UIntPtr.Zero;
        int de = -1;
        for (int attempt = 0; attempt < 5 && (int)nfound == 0; attempt++)
            de = Lib.autd3_remote_discover(500, found, (UIntPtr)found.Length, out nfound);
        Check(de == 0 && (int)nfound >= 1, "discovery found the server: " + de + " " + Lib.Str(Lib.autd3_last_error()));
        if ((int)nfound >= 1)
        {
            fixed (byte* name = found[0].instance) Check(Marshal.PtrToStringAnsi((IntPtr)name) == "csharp-test" && found[0].port == port, "found instance and port");
        }
        using (Geometry geo = Geometry.Create(2))
        {
            RemoteOptions ro = RemoteOptions.Default;
            ro.Address = "127.0.0.1:" + port;
            using (Client c = Client.Open(geo, ro))
            {
                Check(c.Link.Kind == LinkKind.Remote && c.NumDevices == 2, "remote client");
                Check(c.SendChecked(Frame.Simple(0x04)).AllExecuted, "a frame through the server");
                c.Close();
            }
        }
        N.RemoteServerStats st, st0;
        Lib.autd3_remote_server_stats_sized(srv, out st, Lib.Size<N.RemoteServerStats>());
        Lib.autd3_remote_server_stats(srv, out st0);
        Check(st.clients >= 1 && st.requests > 0 && st0.requests == st.requests, "server stats: " + st.clients + " clients, " + st.requests + " requests");
        Check(st.bus_cycles >= st.requests, "server stats: " + st.bus_cycles + " bus cycles for " + st.requests + " requests");
        Lib.autd3_remote_server_stop(srv);
        Check(runner.Join(10000) && runResult == 0, "server run returned after stop: " + runResult);
        Lib.autd3_remote_server_destroy(srv);
        Marshal.FreeHGlobal(listen); Marshal.FreeHGlobal(inst);
        pool.Dispose();
    }

    /// <summary>echocat against autd3-emu in the namespace autd3-netns made.</summary>
    static unsafe void Echocat(string ifname)
    {
        using (Geometry geo = Geometry.Create(2))
        {
            EchocatOptions o = EchocatOptions.Default;
            o.Ethercat.Interface = ifname;
            using (Client c = Client.Open(geo, o))
            using (var buf = new FrameBuffer())
            {
                Check(c.Link.Kind == LinkKind.Echocat && c.NumDevices == 2, "echocat client");
                c.SendChecked(Frame.Broadcast(Command.SilencerDefault()));
                foreach (Command m in Modulation.Sine(150f)) c.SendChecked(Frame.Broadcast(m));
                Check(c.SendChecked(Gain.Focus(90, 70, 150).ToFrame(geo, buf)).AllExecuted, "focus through echocat");
                var tasks = Enumerable.Range(0, 20).Select(i => c.SendAsync(Frame.Simple(0x04))).ToArray();
                Check(Task.WaitAll(tasks, TimeSpan.FromSeconds(30)) && tasks.All(t => t.Result.AllExecuted), "SendAsync through echocat");
                Check(c.FirmwareVersions()[1].cpu_minor == 9, "firmware through echocat");
                LinkStatus st = c.Link.CheckState();
                Check(st.num_devices == 2 && st.state[0] == (byte)DeviceState.Op && st.state[1] == (byte)DeviceState.Op, "devices in OP");
                c.Close();
            }
        }
    }
}
