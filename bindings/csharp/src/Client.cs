// Owners of the C handles (geometry, client, request, link, emulator outputs), responses, and the link view.
//
// Thread rule (docs/bindings.md): native code never calls managed code. A Task from SendAsync is completed by
// the client's own managed completion thread, which waits on the requests in send order (autd3_request_wait
// blocks in C on the request's own semaphore); the bus thread only ever runs C.
using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using Autd3.Native;

namespace Autd3
{
    /// <summary>
    /// The calls in progress on a handle this binding owns (a client, a raw link). The C library frees a client in
    /// autd3_client_close (client.h "Lifetime") and any call with it afterwards is undefined, so Close/Dispose first
    /// takes the handle away from new calls (they throw Closed) and waits for the calls already past that point to
    /// return. A call blocked inside the library on back-pressure holds the library's own reference and is woken by
    /// close with CLOSED: after one second the wait stops, which covers every call that was still between this gate
    /// and the library's reference.
    /// </summary>
    internal sealed class UseGate
    {
        readonly object l = new object();
        readonly string what;
        IntPtr h;
        int users;
        public UseGate(IntPtr h, string what) { this.h = h; this.what = what; }
        public bool IsOpen { get { lock (l) return h != IntPtr.Zero; } }
        /// <summary>The handle for the finalizer only (no other thread can hold an unreachable owner).</summary>
        public IntPtr Raw { get { return h; } }
        public Use Enter()
        {
            lock (l)
            {
                if (h == IntPtr.Zero) throw new AutdException(ErrorCode.Closed, what + ": closed or disposed");
                users++;
                return new Use(this, h);
            }
        }
        void Exit() { lock (l) { if (--users == 0) Monitor.PulseAll(l); } }
        /// <summary>New calls refused from here; returns the handle (IntPtr.Zero if already retired).</summary>
        public IntPtr Retire()
        {
            lock (l)
            {
                IntPtr r = h;
                h = IntPtr.Zero;
                var deadline = DateTime.UtcNow.AddSeconds(1);
                while (users > 0)
                {
                    TimeSpan left = deadline - DateTime.UtcNow;
                    if (left <= TimeSpan.Zero) break;
                    Monitor.Wait(l, left);
                }
                return r;
            }
        }
        /// <summary>One call: `using (var u = gate.Enter()) Lib.f(u.H, ...)`.</summary>
        public struct Use : IDisposable
        {
            readonly UseGate g;
            public readonly IntPtr H;
            internal Use(UseGate g, IntPtr h) { this.g = g; H = h; }
            public void Dispose() { if (g != null) g.Exit(); }
        }
    }

    /// <summary>Per device: what it did with the frame and the data byte it returned.</summary>
    public sealed class Response
    {
        readonly Native.Response r;
        internal Response(Native.Response r) { this.r = r; }
        public int NumDevices { get { return r.num_devices; } }
        public unsafe Outcome Outcome(int dev) { fixed (byte* o = r.outcome) return dev >= 0 && dev < r.num_devices ? (Outcome)o[dev] : Autd3.Outcome.None; }
        public unsafe byte Data(int dev) { fixed (byte* d = r.data) return dev >= 0 && dev < r.num_devices ? d[dev] : (byte)0; }
        public bool AllExecuted
        {
            get { for (int i = 0; i < NumDevices; i++) if (Outcome(i) != Autd3.Outcome.Executed) return false; return NumDevices > 0; }
        }
        /// <summary>Throws AutdException(Device) naming the first device whose data byte is an error code.</summary>
        public void Check() { Native.Response c = r; int dev; byte code; AutdException.Check(Lib.autd3_response_check(ref c, out dev, out code)); }
        internal static Response Finish(int err, Native.Response r)
        {
            var resp = new Response(r);
            if (err != 0) throw AutdException.Last(err, resp);
            return resp;
        }
    }

    /// <summary>Owner of an autd3_geometry_t.</summary>
    public sealed class Geometry : IDisposable
    {
        IntPtr g;
        Geometry(IntPtr g) { this.g = g; }
        /// <summary>`n` devices in a row along x.</summary>
        public static Geometry Create(int n)
        {
            IntPtr g;
            AutdException.Check(Lib.autd3_geometry_create((UIntPtr)Math.Max(n, 0), null, out g));
            return new Geometry(g);
        }
        public static Geometry Create(DevicePose[] poses)
        {
            IntPtr g;
            AutdException.Check(Lib.autd3_geometry_create((UIntPtr)poses.Length, poses, out g));
            return new Geometry(g);
        }
        public static DevicePose PoseAt(float x, float y, float z) { return Lib.autd3_device_pose_at(x, y, z); }
        internal IntPtr Ptr { get { if (g == IntPtr.Zero) throw new ObjectDisposedException("Geometry"); return g; } }
        public int NumDevices { get { return (int)Lib.autd3_geometry_num_devices(Ptr); } }
        public int NumTransducers(int dev) { return (int)Lib.autd3_geometry_num_transducers(Ptr, (UIntPtr)dev); }
        /// <summary>World position (mm) and emission direction of one transducer.</summary>
        public void Transducer(int dev, int tr, out float[] pos, out float[] dir)
        {
            pos = new float[3]; dir = new float[3];
            AutdException.Check(Lib.autd3_geometry_transducer(Ptr, (UIntPtr)dev, (UIntPtr)tr, pos, dir));
        }
        public float SoundSpeed
        {
            get { return Lib.autd3_geometry_sound_speed(Ptr); }
            set { AutdException.Check(Lib.autd3_geometry_set_sound_speed(Ptr, value)); }
        }
        public void Dispose() { if (g != IntPtr.Zero) { Lib.autd3_geometry_free(g); g = IntPtr.Zero; } GC.SuppressFinalize(this); }
        ~Geometry() { if (g != IntPtr.Zero) Lib.autd3_geometry_free(g); }
    }

    /// <summary>One streaming send's handle: Wait, WaitFor, Poll or Detach it once; Dispose detaches.</summary>
    public sealed class Request : IDisposable
    {
        IntPtr h;
        internal Request(IntPtr h) { this.h = h; }
        public bool Valid { get { return h != IntPtr.Zero; } }
        IntPtr Take() { if (h == IntPtr.Zero) throw Released(); IntPtr r = h; h = IntPtr.Zero; return r; }
        static AutdException Released() { return new AutdException(ErrorCode.InvalidHandle, "Request: already waited on, detached or disposed"); }
        /// <summary>Waits; throws AutdException (with the per-device Response) unless every device executed the frame.</summary>
        public Response Wait() { Native.Response r; int e = Lib.autd3_request_wait(Take(), out r); return Response.Finish(e, r); }
        /// <summary>As Wait with a deadline: null (the handle still valid) if not done in time.</summary>
        public Response WaitFor(TimeSpan timeout)
        {
            if (h == IntPtr.Zero) throw Released();
            Native.Response r;
            int e = Lib.autd3_request_wait_for(h, Time.Ms(timeout), out r);
            return Pending(e, r);
        }
        /// <summary>Non-blocking: null (the handle still valid) if not done.</summary>
        public Response Poll()
        {
            if (h == IntPtr.Zero) throw Released();
            Native.Response r;
            int e = Lib.autd3_request_poll(h, out r);
            return Pending(e, r);
        }
        public void Detach() { AutdException.Check(Lib.autd3_request_detach(Take())); }
        Response Pending(int e, Native.Response r)
        {
            if (e == (int)ErrorCode.Pending) return null;
            h = IntPtr.Zero; // released by the call in every other case
            return Response.Finish(e, r);
        }
        public void Dispose() { if (h != IntPtr.Zero) { Lib.autd3_request_detach(h); h = IntPtr.Zero; } GC.SuppressFinalize(this); }
        ~Request() { if (h != IntPtr.Zero) Lib.autd3_request_detach(h); }
    }

    /// <summary>Owner of a reference to an emulator link's output states; readable after the client closed.</summary>
    public sealed class EmulatorOutputs : IDisposable
    {
        IntPtr o;
        internal EmulatorOutputs(IntPtr o) { this.o = o; }
        public OutputState Read(int dev)
        {
            if (o == IntPtr.Zero) throw new ObjectDisposedException("EmulatorOutputs");
            OutputState s;
            AutdException.Check(Lib.autd3_emulator_outputs_read(o, (ushort)dev, out s));
            return s;
        }
        public void Dispose() { if (o != IntPtr.Zero) { Lib.autd3_emulator_outputs_release(o); o = IntPtr.Zero; } GC.SuppressFinalize(this); }
        ~EmulatorOutputs() { if (o != IntPtr.Zero) Lib.autd3_emulator_outputs_release(o); }
    }

    /// <summary>A link owned by someone else (a client's or a Link's): statistics, state checks, emulator fault injection.
    /// Valid while its owner is open; afterwards every call throws Closed (the C link is closed with its owner).</summary>
    public struct LinkView
    {
        readonly UseGate gate;
        readonly IntPtr l;
        internal LinkView(UseGate gate, IntPtr l) { this.gate = gate; this.l = l; }
        UseGate.Use Enter()
        {
            if (gate == null) throw new AutdException(ErrorCode.Closed, "LinkView: not taken from an open Client or Link");
            return gate.Enter();
        }
        public LinkKind Kind { get { using (Enter()) return (LinkKind)Lib.autd3_link_kind(l); } }
        public int NumDevices { get { using (Enter()) return (int)Lib.autd3_link_num_devices(l); } }
        public LinkStats Stats { get { LinkStats s; using (Enter()) Lib.autd3_link_stats_sized(l, out s, Lib.Size<LinkStats>()); return s; } }
        public uint DeviceResets(int dev) { using (Enter()) return Lib.autd3_link_device_resets(l, (ushort)dev); }
        public LinkStatus CheckState()
        {
            LinkStatus s;
            using (Enter()) AutdException.Check(Lib.autd3_link_check_state_sized(l, out s, Lib.Size<LinkStatus>()));
            return s;
        }
        public string Diagnostics()
        {
            var b = new byte[4096];
            int n;
            using (Enter()) n = (int)Lib.autd3_link_diagnostics(l, b, (UIntPtr)b.Length);
            return System.Text.Encoding.UTF8.GetString(b, 0, Math.Min(n, b.Length));
        }
        // Emulator links only.
        public void Inject(int dev, DeviceFault f) { using (Enter()) AutdException.Check(Lib.autd3_emulator_inject(l, (ushort)dev, ref f)); }
        public void PowerCycle(int dev) { using (Enter()) AutdException.Check(Lib.autd3_emulator_power_cycle(l, (ushort)dev)); }
        public DeviceCounters Counters(int dev)
        {
            DeviceCounters c;
            using (Enter()) AutdException.Check(Lib.autd3_emulator_counters_sized(l, (ushort)dev, out c, Lib.Size<DeviceCounters>()));
            return c;
        }
        public OutputState Output(int dev) { OutputState s; using (Enter()) AutdException.Check(Lib.autd3_emulator_output(l, (ushort)dev, out s)); return s; }
        public EmulatorOutputs Outputs() { IntPtr o; using (Enter()) AutdException.Check(Lib.autd3_emulator_outputs(l, out o)); return new EmulatorOutputs(o); }
        public ExecEntry[] DrainLog(int dev, int max = 2048)
        {
            var v = new ExecEntry[max];
            UIntPtr n; ulong dropped;
            using (Enter()) AutdException.Check(Lib.autd3_emulator_log_drain(l, (ushort)dev, v, (UIntPtr)max, out n, out dropped));
            Array.Resize(ref v, (int)n);
            return v;
        }
    }

    /// <summary>A link driven by the caller (tools with their own bus loop; most users open a Client).</summary>
    public sealed class Link : IDisposable
    {
        UseGate gate;
        public static Link Open(ILinkOptions options, Geometry geo)
        {
            var pool = new StringPoolHandle();
            try
            {
                Native.LinkOption o = options.ToNative(pool);
                Client.Register(options.Kind);
                IntPtr l;
                AutdException.Check(Lib.autd3_link_open(ref o, geo.Ptr, out l));
                return new Link { gate = new UseGate(l, "Link") };
            }
            finally { pool.Dispose(); }
        }
        public LinkView View { get { using (var u = gate.Enter()) return new LinkView(gate, u.H); } }
        /// <summary>One bus cycle: tx N × 626 bytes, rx N × 2; true if rx is this cycle's.</summary>
        public bool Cycle(byte[] tx, byte[] rx) { return Cycle(tx, rx, null); }
        /// <summary>As Cycle, with each device's inputs' validity in `devValid` (N entries; autd3_link_cycle_devices):
        /// true = device d's 2 bytes are its answer to this cycle even when another device's are not.</summary>
        public bool Cycle(byte[] tx, byte[] rx, bool[] devValid)
        {
            using (var u = gate.Enter())
            {
                int n = (int)Lib.autd3_link_num_devices(u.H);
                if (tx.Length != n * 626 || rx.Length != n * 2 || (devValid != null && devValid.Length != n))
                    throw new ArgumentException("tx N x 626 bytes, rx N x 2, devValid N entries");
                bool valid;
                if (devValid == null)
                {
                    AutdException.Check(Lib.autd3_link_cycle(u.H, tx, rx, out valid));
                    return valid;
                }
                var dv = new byte[n];
                AutdException.Check(Lib.autd3_link_cycle_devices(u.H, tx, rx, out valid, dv));
                for (int i = 0; i < n; i++) devValid[i] = dv[i] != 0;
                return valid;
            }
        }
        public void WaitNextCycle() { using (var u = gate.Enter()) AutdException.Check(Lib.autd3_link_wait_next_cycle(u.H)); }
        public void Dispose() { IntPtr l = gate.Retire(); if (l != IntPtr.Zero) Lib.autd3_link_close(l); GC.SuppressFinalize(this); }
        ~Link() { if (gate != null && gate.Raw != IntPtr.Zero) Lib.autd3_link_close(gate.Raw); }
    }

    /// <summary>An open client. Dispose closes it, which silences every device (a zero output pattern) first; Close
    /// does the same and throws if a device did not confirm it is silent. Every member may be called from any
    /// thread; after Close/Dispose they throw AutdException(Closed), and a LinkView taken before does too.</summary>
    public sealed class Client : IDisposable
    {
        readonly UseGate gate;
        readonly object sendOrder = new object(); // SendAsync: a request enters `pending` in send order
        BlockingCollection<Pending> pending; // SendAsync's requests, in send order
        Thread completer;
        sealed class Pending { public IntPtr Req; public TaskCompletionSource<Response> Tcs; }

        Client(IntPtr c) { gate = new UseGate(c, "Client"); }
        public static Client Open(Geometry geo, ILinkOptions link, ClientConfig? config = null)
        {
            var pool = new StringPoolHandle();
            try
            {
                Native.LinkOption o = link.ToNative(pool);
                Native.ClientConfig cfg = (config ?? ClientConfig.Default).ToNative();
                Register(link.Kind);
                IntPtr c;
                AutdException.Check(Lib.autd3_client_open(geo.Ptr, ref o, ref cfg, out c));
                return new Client(c);
            }
            finally { pool.Dispose(); }
        }
        /// <summary>SOEM and EtherCrab live in their own libraries, which a managed process does not load by itself.</summary>
        internal static void Register(LinkKind k)
        {
            try
            {
                if (k == LinkKind.Soem && !Library.LinkKindAvailable(k)) Lib.autd3_link_soem_register();
                if (k == LinkKind.Ethercrab && !Library.LinkKindAvailable(k)) Lib.autd3_link_ethercrab_register();
            }
            catch (DllNotFoundException) { } // open then reports NOT_BUILT, naming the CMake option
            catch (EntryPointNotFoundException) { }
        }
        public bool IsOpen { get { return gate.IsOpen; } }

        /// <summary>Queue a frame (streaming); blocks only on back-pressure.</summary>
        public Request Send(Frame f) { IntPtr r; using (var u = gate.Enter()) AutdException.Check(Lib.autd3_client_send(u.H, ref f.f, out r)); return new Request(r); }
        /// <summary>Queue a frame without a handle (still tracked and acked).</summary>
        public void SendDetached(Frame f) { using (var u = gate.Enter()) AutdException.Check(Lib.autd3_client_send_detached(u.H, ref f.f, IntPtr.Zero)); }
        /// <summary>Send, wait and check the devices' data bytes; throws AutdException with the Response otherwise.</summary>
        public Response SendChecked(Frame f)
        {
            Native.Response r;
            int e;
            using (var u = gate.Enter()) e = Lib.autd3_client_send_checked(u.H, ref f.f, out r);
            return Response.Finish(e, r);
        }
        /// <summary>Queue a frame; the task completes (on the client's completion thread, continuations run
        /// asynchronously) when every device executed it, or faults with AutdException carrying the Response.</summary>
        public Task<Response> SendAsync(Frame f)
        {
            var p = new Pending { Tcs = new TaskCompletionSource<Response>(TaskCreationOptions.RunContinuationsAsynchronously) };
            lock (sendOrder)
            {
                using (var u = gate.Enter())
                {
                    if (pending == null)
                    {
                        pending = new BlockingCollection<Pending>();
                        // The thread holds the queue, not the client, so a client nobody disposed can still be finalized.
                        BlockingCollection<Pending> q = pending;
                        completer = new Thread(() => Complete(q)) { IsBackground = true, Name = "autd3 completion" };
                        completer.Start();
                    }
                    AutdException.Check(Lib.autd3_client_send(u.H, ref f.f, out p.Req));
                    pending.Add(p);
                }
            }
            return p.Tcs.Task;
        }
        static void Complete(BlockingCollection<Pending> q)
        {
            // Request handles stay valid after close (client.h "Lifetime"): no gate needed here.
            foreach (Pending p in q.GetConsumingEnumerable())
            {
                Native.Response r;
                int e = Lib.autd3_request_wait(p.Req, out r);
                if (e == 0) p.Tcs.SetResult(new Response(r));
                else p.Tcs.SetException(AutdException.Last(e, new Response(r)));
            }
        }
        public FwVersion[] FirmwareVersions()
        {
            using (var u = gate.Enter())
            {
                var v = new FwVersion[(int)Lib.autd3_client_num_devices(u.H)];
                AutdException.Check(Lib.autd3_client_read_firmware_version(u.H, v));
                return v;
            }
        }
        public byte[] ErrorDetails() { return Bytes(Lib.autd3_client_read_error_detail); }
        public byte[] FpgaStates() { return Bytes(Lib.autd3_client_read_fpga_state); }
        byte[] Bytes(Func<IntPtr, byte[], int> read)
        {
            using (var u = gate.Enter())
            {
                var v = new byte[(int)Lib.autd3_client_num_devices(u.H)];
                AutdException.Check(read(u.H, v));
                return v;
            }
        }
        public Protocol Protocol { get { using (var u = gate.Enter()) return (Protocol)Lib.autd3_client_protocol(u.H); } }
        public int NumDevices { get { using (var u = gate.Enter()) return (int)Lib.autd3_client_num_devices(u.H); } }
        public LinkView Link { get { using (var u = gate.Enter()) return new LinkView(gate, Lib.autd3_client_link(u.H)); } }
        public ClientStats Stats { get { ClientStats s; using (var u = gate.Enter()) Lib.autd3_client_stats_sized(u.H, out s, Lib.Size<ClientStats>()); return s; } }
        public uint DeviceResets(int dev) { using (var u = gate.Enter()) return Lib.autd3_client_device_resets(u.H, (ushort)dev); }
        public ClientDeviceStatus DeviceStatus(int dev)
        {
            ClientDeviceStatus s;
            using (var u = gate.Enter()) AutdException.Check(Lib.autd3_client_device_status_sized(u.H, (ushort)dev, out s, Lib.Size<ClientDeviceStatus>()));
            return s;
        }

        /// <summary>Silence every device and close; throws (after closing all the same) naming the devices that may still emit.</summary>
        public void Close() { int e = Shutdown(); if (e != 0) throw new AutdException((ErrorCode)e, lastCloseError); }
        public void Dispose() { Shutdown(); GC.SuppressFinalize(this); }
        ~Client()
        {
            // A forgotten client still silences the array. Closing fails the requests still in flight, so the
            // completion thread's waits return; then its queue ends.
            if (gate.Raw != IntPtr.Zero) Lib.autd3_client_close(gate.Raw);
            try { if (pending != null) pending.CompleteAdding(); } catch (ObjectDisposedException) { }
        }
        int Shutdown()
        {
            IntPtr h = gate.Retire(); // new calls throw Closed from here; calls in progress have returned (UseGate)
            if (h == IntPtr.Zero) return 0;
            BlockingCollection<Pending> q;
            Thread t;
            lock (sendOrder) { q = pending; t = completer; pending = null; completer = null; }
            if (q != null) q.CompleteAdding();
            int e = Lib.autd3_client_close(h); // requests still in flight fail with CLOSED; their handles stay valid
            string msg = e != 0 ? Lib.Str(Lib.autd3_last_error()) : null;
            if (t != null) t.Join();
            if (e != 0) lastCloseError = msg;
            return e;
        }
        string lastCloseError;
        /// <summary>The message of the last failed Close/Dispose (Dispose never throws).</summary>
        public string LastCloseError { get { return lastCloseError; } }
    }
}
