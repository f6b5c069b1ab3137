// The command encoders (command.h) as value types, frames, frame buffers, gains, modulations and STMs.
using System;
using System.Runtime.InteropServices;
using Autd3.Native;

namespace Autd3
{
    /// <summary>A bank transition.</summary>
    public struct Transition
    {
        public TransitionMode Mode;
        public ulong Value;
        public uint MarginNs;
        public static Transition Immediate { get { return new Transition { Mode = TransitionMode.Immediate }; } }
        public static Transition Ext { get { return new Transition { Mode = TransitionMode.Ext }; } }
        public static Transition SyncIdx { get { return new Transition { Mode = TransitionMode.SyncIdx }; } }
        public static Transition Gpio(byte pin) { return new Transition { Mode = TransitionMode.Gpio, Value = pin }; }
        /// <summary>At DC system time `t` since the DC epoch (2000-01-01).</summary>
        public static Transition SysTime(TimeSpan t) { return new Transition { Mode = TransitionMode.SysTime, Value = Time.Ns64(t) }; }
        internal Native.Transition ToNative() { return new Native.Transition { mode = (int)Mode, value = Value, margin_ns = MarginNs }; }
    }

    /// <summary>One device's command: opcode and payload, from an encoder.</summary>
    public struct Command
    {
        internal Native.Command c;
        public byte Opcode { get { return c.cmd; } }
        public Native.Command Raw { get { return c; } }
        delegate int Enc(out Native.Command c);
        static Command Make(Enc f) { Command r; AutdException.Check(f(out r.c)); return r; }

        public static Command SilencerDefault() { return Make((out Native.Command c) => Lib.autd3_cmd_silencer_default(out c)); }
        public static Command SilencerDisable() { return Make((out Native.Command c) => Lib.autd3_cmd_silencer_disable(out c)); }
        public static Command SilencerFixedCompletionTime(TimeSpan intensity, TimeSpan phase, bool strict = true)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_silencer_fixed_completion_time(out c, Time.Ns64(intensity), Time.Ns64(phase), strict));
        }
        public static Command SilencerFixedUpdateRate(ushort intensity, ushort phase)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_silencer_fixed_update_rate(out c, intensity, phase));
        }
        public static Command WritePattern(byte bank, uint offset, Drive[] drives)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_write_pattern(out c, bank, offset, drives, (UIntPtr)drives.Length));
        }
        public static Command ConfigPattern(byte bank, ushort divider, uint size, ushort rep)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_config_pattern(out c, bank, divider, size, rep));
        }
        public static Command ChangePatternBank(byte bank, Transition t)
        {
            Native.Transition n = t.ToNative();
            return Make((out Native.Command c) => Lib.autd3_cmd_change_pattern_bank(out c, bank, ref n));
        }
        public static Command WritePatternFused(byte bank, Drive[] drives249, ushort divider, Transition t)
        {
            if (drives249 == null || drives249.Length != 249) throw new ArgumentException("249 drives", "drives249");
            Native.Transition n = t.ToNative();
            return Make((out Native.Command c) => Lib.autd3_cmd_write_pattern_fused(out c, bank, drives249, divider, ref n));
        }
        public static Command WritePatternCompressed(byte bank, uint index, PatternCompression format, byte[] phases)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_write_pattern_compressed(out c, bank, index, (int)format, phases, (UIntPtr)(phases.Length / 249)));
        }
        public static Command PhaseCorrection(byte[] phase249) { Need(phase249, 249); return Make((out Native.Command c) => Lib.autd3_cmd_phase_correction(out c, phase249)); }
        public static Command OutputMask(bool[] enabled249)
        {
            Need(enabled249, 249);
            return Make((out Native.Command c) => Lib.autd3_cmd_output_mask(out c, Bools(enabled249)));
        }
        public static Command WriteModulation(byte bank, uint offset, byte[] data)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_write_modulation(out c, bank, offset, data, (UIntPtr)data.Length));
        }
        public static Command ConfigModulation(byte bank, ushort divider, uint size, ushort rep)
        {
            return Make((out Native.Command c) => Lib.autd3_cmd_config_modulation(out c, bank, divider, size, rep));
        }
        public static Command ChangeModulationBank(byte bank, Transition t)
        {
            Native.Transition n = t.ToNative();
            return Make((out Native.Command c) => Lib.autd3_cmd_change_modulation_bank(out c, bank, ref n));
        }
        public static Command WriteModulationFused(byte bank, byte[] data, ushort divider, ushort rep, Transition t)
        {
            Native.Transition n = t.ToNative();
            return Make((out Native.Command c) => Lib.autd3_cmd_write_modulation_fused(out c, bank, data, (UIntPtr)data.Length, divider, rep, ref n));
        }
        public static Command PulseWidthTable(ushort[] table256) { Need(table256, 256); return Make((out Native.Command c) => Lib.autd3_cmd_pulse_width_table(out c, table256)); }
        public static ushort[] DefaultPulseWidthTable() { var t = new ushort[256]; Lib.autd3_pulse_width_table_default(t); return t; }
        public static Command ForceFan(bool on) { return Make((out Native.Command c) => Lib.autd3_cmd_force_fan(out c, on)); }
        public static Command EmulateGpioIn(bool[] in4) { Need(in4, 4); return Make((out Native.Command c) => Lib.autd3_cmd_emulate_gpio_in(out c, Bools(in4))); }
        public static Command GpioOut(GpioOutType[] types, ulong[] values)
        {
            Need(types, 4); Need(values, 4);
            var o = new Native.GpioOut[4];
            for (int i = 0; i < 4; i++) o[i] = new Native.GpioOut { type = (int)types[i], value = values[i] };
            return Make((out Native.Command c) => Lib.autd3_cmd_gpio_out(out c, o));
        }

        internal const ushort LoopInfinite = 0xFFFF;
        static void Need(Array a, int n) { if (a == null || a.Length != n) throw new ArgumentException("expected " + n + " elements"); }
        static byte[] Bools(bool[] b) { var r = new byte[b.Length]; for (int i = 0; i < b.Length; i++) r[i] = (byte)(b[i] ? 1 : 0); return r; }
        internal static Command[] Take(Native.Command[] buf, UIntPtr n)
        {
            var r = new Command[(int)n];
            for (int i = 0; i < r.Length; i++) r[i].c = buf[i];
            return r;
        }
    }

    /// <summary>A frame to send. One made from a FrameBuffer keeps the buffer alive.</summary>
    public sealed class Frame
    {
        internal Native.Frame f;
        internal readonly FrameBuffer keep;
        internal Frame(Native.Frame f, FrameBuffer keep = null) { this.f = f; this.keep = keep; }
        public Native.Frame Raw { get { return f; } }
        public static Frame Simple(byte cmd) { return new Frame(Lib.autd3_frame_simple(cmd)); }
        public static Frame SetMode(bool lowLatency) { return new Frame(Lib.autd3_frame_set_mode(lowLatency ? 1 : 0)); }
        public static Frame Broadcast(Command c) { Native.Frame f; AutdException.Check(Lib.autd3_frame_broadcast(ref c.c, out f)); return new Frame(f); }
        public static Frame XorHash(TimeSpan sleep, byte[] data)
        {
            Native.Frame f;
            AutdException.Check(Lib.autd3_frame_xor_hash(out f, (ushort)Math.Min(Time.Ms(sleep), 0xFFFFu), data, (UIntPtr)data.Length));
            return new Frame(f);
        }
        public static Frame XorHashBench(int len) { Native.Frame f; AutdException.Check(Lib.autd3_frame_xor_hash_bench(out f, 0, (UIntPtr)len)); return new Frame(f); }
    }

    /// <summary>One command per device, in native memory (about 80 KB): the frame it makes points into it.</summary>
    public sealed class FrameBuffer : IDisposable
    {
        IntPtr p;
        public FrameBuffer()
        {
            int n = Marshal.SizeOf(typeof(Native.FrameBuffer));
            p = Marshal.AllocHGlobal(n);
            for (int i = 0; i < n; i += 8) Marshal.WriteInt64(p, i, 0); // 80 K: 8-byte stores (size is a multiple of 8)
        }
        internal IntPtr Ptr { get { if (p == IntPtr.Zero) throw new ObjectDisposedException("FrameBuffer"); return p; } }
        public int NumDevices { get { return (int)Marshal.ReadIntPtr(Ptr); } }
        public void Set(int dev, Command c) { AutdException.Check(Lib.autd3_frame_buffer_set(Ptr, (UIntPtr)dev, ref c.c)); }
        public Frame ToFrame() { Native.Frame f; AutdException.Check(Lib.autd3_frame_buffer_frame(Ptr, out f)); return new Frame(f, this); }
        public void Dispose() { if (p != IntPtr.Zero) { Marshal.FreeHGlobal(p); p = IntPtr.Zero; } GC.SuppressFinalize(this); }
        ~FrameBuffer() { if (p != IntPtr.Zero) Marshal.FreeHGlobal(p); }
    }

    /// <summary>A gain (value type): a drive per transducer from a geometry.</summary>
    public struct Gain
    {
        internal Native.Gain g;
        public static Gain Null() { return new Gain { g = Lib.autd3_gain_null() }; }
        public static Gain Focus(float x, float y, float z) { return new Gain { g = Lib.autd3_gain_focus(x, y, z) }; }
        public static Gain Plane(float dx, float dy, float dz) { return new Gain { g = Lib.autd3_gain_plane(dx, dy, dz) }; }
        public static Gain Bessel(float x, float y, float z, float dx, float dy, float dz, float theta) { return new Gain { g = Lib.autd3_gain_bessel(x, y, z, dx, dy, dz, theta) }; }
        public static Gain Uniform(byte phase, byte intensity) { return new Gain { g = Lib.autd3_gain_uniform(phase, intensity) }; }
        public byte Intensity { get { return g.intensity; } set { g.intensity = value; } }
        public byte PhaseOffset { get { return g.phase_offset; } set { g.phase_offset = value; } }
        public Drive[] Calc(Geometry geo, int dev)
        {
            var d = new Drive[249];
            AutdException.Check(Lib.autd3_gain_calc(ref g, geo.Ptr, (UIntPtr)dev, d));
            return d;
        }
        /// <summary>The frame putting this gain on every device of `geo`, built in `buf`.</summary>
        public Frame ToFrame(Geometry geo, FrameBuffer buf)
        {
            Native.Frame f;
            AutdException.Check(Lib.autd3_gain_frame(ref g, geo.Ptr, buf.Ptr, out f));
            return new Frame(f, buf);
        }
    }

    /// <summary>Modulations: the broadcast commands that send one, in order.</summary>
    public static class Modulation
    {
        /// <summary>Sine of `freqHz` sampled every `divider` × 25 µs (pyautd3's default depth: amplitude 255, offset 127).</summary>
        public static Command[] Sine(float freqHz, ushort divider = 10, byte amplitude = 255, byte offset = 127)
        {
            IntPtr buf = Marshal.AllocHGlobal(65536);
            try
            {
                Native.Modulation m;
                AutdException.Check(Lib.autd3_modulation_sine(freqHz, divider, amplitude, offset, buf, (UIntPtr)65536, out m));
                return Commands(ref m);
            }
            finally { Marshal.FreeHGlobal(buf); }
        }
        public static Command[] Static(byte intensity = 255)
        {
            IntPtr buf = Marshal.AllocHGlobal(2);
            try
            {
                Native.Modulation m;
                AutdException.Check(Lib.autd3_modulation_static(intensity, buf, out m));
                return Commands(ref m);
            }
            finally { Marshal.FreeHGlobal(buf); }
        }
        /// <summary>Any samples (255 = full), one every `divider` × 25 µs.</summary>
        public static Command[] Custom(byte[] samples, ushort divider, byte bank = 0, ushort rep = Command.LoopInfinite, bool later = false)
        {
            GCHandle h = GCHandle.Alloc(samples, GCHandleType.Pinned);
            try
            {
                var m = new Native.Modulation
                {
                    data = h.AddrOfPinnedObject(), size = (UIntPtr)samples.Length, divider = divider, rep = rep, bank = bank,
                    transition = Transition.Immediate.ToNative(), later = (byte)(later ? 1 : 0),
                };
                return Commands(ref m);
            }
            finally { h.Free(); }
        }
        static Command[] Commands(ref Native.Modulation m)
        {
            var o = new Native.Command[109];
            UIntPtr n;
            AutdException.Check(Lib.autd3_modulation_commands(ref m, o, (UIntPtr)o.Length, out n));
            return Command.Take(o, n);
        }
    }

    /// <summary>STMs: one device's commands (send command k of every device together, FrameBuffer).</summary>
    public static class Stm
    {
        public static Command[] Pattern(Drive[] drives, ushort divider, ushort rep = Command.LoopInfinite, byte bank = 0,
                                        PatternCompression compression = PatternCompression.None, bool later = false)
        {
            GCHandle h = GCHandle.Alloc(drives, GCHandleType.Pinned);
            try
            {
                var s = new Native.PatternStm
                {
                    drives = h.AddrOfPinnedObject(), size = (UIntPtr)(drives.Length / 249), divider = divider, rep = rep, bank = bank,
                    transition = Transition.Immediate.ToNative(), later = (byte)(later ? 1 : 0), compression = (int)compression,
                };
                var o = new Native.Command[1026];
                UIntPtr n;
                AutdException.Check(Lib.autd3_pattern_stm_commands(ref s, o, (UIntPtr)o.Length, out n));
                return Command.Take(o, n);
            }
            finally { h.Free(); }
        }
        /// <summary>`points`: size × numFoci control points, step after step; intensities null = 255.</summary>
        public static Command[] Foci(Geometry geo, int dev, ControlPoint[] points, byte numFoci, ushort divider, byte[] intensities = null,
                                     ushort rep = Command.LoopInfinite, byte bank = 0, bool later = false)
        {
            GCHandle hp = GCHandle.Alloc(points, GCHandleType.Pinned);
            GCHandle hi = intensities != null ? GCHandle.Alloc(intensities, GCHandleType.Pinned) : default(GCHandle);
            try
            {
                var s = new Native.FociStm
                {
                    points = hp.AddrOfPinnedObject(), intensities = intensities != null ? hi.AddrOfPinnedObject() : IntPtr.Zero,
                    size = (UIntPtr)(numFoci == 0 ? 0 : points.Length / numFoci), num_foci = numFoci, divider = divider, rep = rep, bank = bank,
                    transition = Transition.Immediate.ToNative(), later = (byte)(later ? 1 : 0),
                };
                var o = new Native.Command[854];
                UIntPtr n;
                AutdException.Check(Lib.autd3_foci_stm_commands(ref s, geo.Ptr, (UIntPtr)dev, o, (UIntPtr)o.Length, out n));
                return Command.Take(o, n);
            }
            finally { hp.Free(); if (intensities != null) hi.Free(); }
        }
        public static unsafe ControlPoint Point(float x, float y, float z, byte phaseOffset = 0)
        {
            var p = new ControlPoint { phase_offset = phaseOffset };
            p.pos[0] = x; p.pos[1] = y; p.pos[2] = z;
            return p;
        }
    }
}
