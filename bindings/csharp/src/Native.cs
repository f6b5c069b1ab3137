// P/Invoke mirror of libautd3's C ABI (include/autd3/*.h): every public struct and every exported function
// except the link implementers' (link_driver.h). docs/bindings.md says how it maps the ABI.
//
// Rules this file keeps (tests/layout_cs.cs and tests/test_csharp.cs check them):
//  - every struct is blittable: C `bool` is `byte`, C arrays are `fixed` buffers, pointers and `size_t` are
//    IntPtr/UIntPtr, enums are int-sized as in C (x86-64 Linux and Windows x64 alike). Its size and every
//    field offset equal the C compiler's (csharp.layout_*);
//  - a size-tagged struct gets its `size` from this mirror (Marshal.SizeOf), never from a C by-value default;
//  - nothing here is a callback: no delegate ever reaches native code, so the bus thread never calls managed
//    code (the remote server's `log` stays IntPtr.Zero = stderr).
using System;
using System.Runtime.InteropServices;

namespace Autd3.Native
{
    /// <summary>Marks a mirror of the C struct `struct NAME` (the layout test matches them by this name).</summary>
    [AttributeUsage(AttributeTargets.Struct)]
    public sealed class CStructAttribute : Attribute { public readonly string Name; public CStructAttribute(string n) { Name = n; } }
    /// <summary>Marks a mirror of a union member of a C struct (its members are printed as field.member).</summary>
    [AttributeUsage(AttributeTargets.Struct)]
    public sealed class CUnionAttribute : Attribute { }

    [CStruct("autd3_fw_version"), StructLayout(LayoutKind.Sequential)]
    public struct FwVersion { public byte cpu_major, cpu_minor, cpu_patch, fpga_major, fpga_minor, fpga_patch; }

    [CStruct("autd3_timing_model"), StructLayout(LayoutKind.Sequential)]
    public struct TimingModel { public byte take_on_sync0; public uint fifo_latency_ns; public uint ll_latency_ns; public byte publish_on_sync0; }

    [CStruct("autd3_emulator_option"), StructLayout(LayoutKind.Sequential)]
    public struct EmulatorOption { public uint cycle_ns; public TimingModel timing; public FwVersion version; public uint firmware; }

    [CStruct("autd3_device_counters"), StructLayout(LayoutKind.Sequential)]
    public struct DeviceCounters { public ulong received, executed, deduplicated, dropped, seq_mismatch, resets, errors; }

    [CStruct("autd3_device_fault"), StructLayout(LayoutKind.Sequential)]
    public struct DeviceFault { public uint drop_next; public byte freeze; public uint invalidate_rx; }

    [CStruct("autd3_exec_entry"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct ExecEntry { public uint index; public uint tag; public ushort boot; public byte seq; public byte cmd; public byte result; public fixed byte reserved[3]; }

    [CStruct("autd3_output_state"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct OutputState
    {
        public fixed byte phase[249];
        public fixed byte intensity[249];
        public byte pattern_bank, pattern_emission_type;
        public ushort pattern_divider;
        public uint pattern_size;
        public ushort pattern_rep;
        public byte transition_pending;
        public byte modulation_bank;
        public uint modulation_size;
        public ushort modulation_divider, modulation_rep;
        public byte modulation_transition_pending;
        public uint modulation_cursor;
        public byte modulation;
        public fixed byte modulation_buffer[1024];
        public byte silencer_flag;
        public ushort silencer_update_rate_intensity, silencer_update_rate_phase;
        public ushort silencer_completion_steps_intensity, silencer_completion_steps_phase;
        public fixed ushort pulse_width_table[256];
        public byte force_fan;
        public byte gpio_in;
        public fixed ulong gpio_out[4];
        public byte fpga_state;
        public byte error_detail;
    }

    [CStruct("autd3_device_pose"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct DevicePose { public fixed float pos[3]; public fixed float rot[4]; }

    [CStruct("autd3_ethercat_option"), StructLayout(LayoutKind.Sequential)]
    public struct EthercatOption
    {
        public IntPtr @interface; // union { interface; adapter; }
        public uint sync0_period_ns;
        public int sync0_shift_ns;
        public uint send_cycle_ns, sync_tolerance_ns, sync_timeout_ms, state_timeout_ms, op_wait_timeout_ms;
        public int rt_priority, rt_cpu;
        public IntPtr capture_path;
    }

    [CStruct("autd3_echocat_option"), StructLayout(LayoutKind.Sequential)]
    public struct EchocatOption { public EthercatOption ethercat; public int backend; public uint spin_ns; public uint warmup_cycles; }

    [CStruct("autd3_soem_option"), StructLayout(LayoutKind.Sequential)]
    public struct SoemOption { public EthercatOption ethercat; }

    [CStruct("autd3_ethercrab_option"), StructLayout(LayoutKind.Sequential)]
    public struct EthercrabOption { public EthercatOption ethercat; public uint pdu_timeout_ms; }

    [CStruct("autd3_twincat_option"), StructLayout(LayoutKind.Sequential)]
    public struct TwincatOption
    {
        public IntPtr server_ip; public ushort server_port; public IntPtr server_ams_net_id; public IntPtr client_ams_net_id;
        public ushort ams_port; public uint timeout_ms; public uint task_cycle_us; public byte no_notification;
    }

    [CStruct("autd3_remote_option"), StructLayout(LayoutKind.Sequential)]
    public struct RemoteOption { public IntPtr address; public uint timeout_ms; public int pipeline; public uint protocol; }

    [CStruct("autd3_remote_found"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct RemoteFound
    {
        public fixed byte instance[64]; public fixed byte host[128]; public fixed byte address[64];
        public ushort port; public byte wire; public fixed byte sdk[48]; public ushort control_port; public byte simulator;
    }

    [CUnion, StructLayout(LayoutKind.Explicit, Size = 256)]
    public unsafe struct LinkOptionUnion
    {
        [FieldOffset(0)] public EmulatorOption emulator;
        [FieldOffset(0)] public EchocatOption echocat;
        [FieldOffset(0)] public SoemOption soem;
        [FieldOffset(0)] public EthercrabOption ethercrab;
        [FieldOffset(0)] public TwincatOption twincat;
        [FieldOffset(0)] public RemoteOption remote;
        [FieldOffset(0)] public fixed ulong reserved_[32];
    }

    [CStruct("autd3_link_option"), StructLayout(LayoutKind.Sequential)]
    public struct LinkOption { public uint size; public int kind; public LinkOptionUnion u; }

    [CStruct("autd3_link_stats"), StructLayout(LayoutKind.Sequential)]
    public struct LinkStats
    {
        public ulong cycles, stale_cycles, lost_cycles;
        public uint measured, reserved_;
        public ulong phase_excursions, worst_phase_deviation_ns, exchanges, exchange_ns_total, worst_exchange_ns;
        public ulong dc_sample_host_ns, dc_sample_time_ns;
        /// <summary>The mean exchange time (ns); 0 without exchanges. Whether the link times them: measured bit 0x08.</summary>
        public ulong MeanExchangeNs { get { return exchanges == 0 ? 0 : exchange_ns_total / exchanges; } }
        /// <summary>Whether the link measures what bit <c>bit</c> of link.h's AUTD3_LINK_MEASURES_* stands for (else the fields are 0: not measured).</summary>
        public bool Measures(uint bit) { return (measured & bit) != 0; }
    }

    [CStruct("autd3_link_device_info"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct LinkDeviceInfo
    {
        public uint measured, resets; public ulong stale_cycles;
        public fixed byte crc_errors[4]; public fixed byte phy_errors[4]; public fixed byte forwarded_errors[4]; public fixed byte lost_links[4];
        public byte processing_unit_errors, pdi_errors; public fixed byte reserved_[2]; public int dc_deviation_ns;
    }

    [CStruct("autd3_link_status"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct LinkStatus
    {
        public ushort num_devices; public fixed byte state[128]; public fixed byte al_state[128]; public ulong recoveries;
        public uint measured; public fixed uint device_recoveries[128];
    }

    [CStruct("autd3_client_config"), StructLayout(LayoutKind.Sequential)]
    public struct ClientConfig
    {
        public uint size, timeout_cycles, max_inflight, max_resync_rounds;
        public byte low_latency;
        public uint reset_resend_cycles;
        public int rt_priority, rt_cpu;
        public byte require_supported_firmware;
        public uint close_timeout_ms;
        public uint protocol;
    }

    [CStruct("autd3_response"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct Response { public ushort num_devices; public fixed byte data[128]; public fixed byte outcome[128]; }

    [CStruct("autd3_client_stats"), StructLayout(LayoutKind.Sequential)]
    public struct ClientStats
    {
        public ulong sent, completed, failed, resyncs, resets, retransmits, bus_cpu_ns, bus_cycles;
        public ulong device_resets, reinits, unknown_outcomes, second_master, device_timeouts;
    }

    [CStruct("autd3_client_device_status"), StructLayout(LayoutKind.Sequential)]
    public struct ClientDeviceStatus { public uint resets; public uint reinits; public int state; public uint reserved_; public ulong executed, not_executed, unknown, aways; }

    [CStruct("autd3_frame"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct Frame { public byte cmd; public ushort len; public fixed byte payload[624]; public IntPtr device_cmds; public IntPtr device_payloads; }

    [CStruct("autd3_drive"), StructLayout(LayoutKind.Sequential)]
    public struct Drive { public byte phase; public byte intensity; public Drive(byte p, byte i) { phase = p; intensity = i; } }

    [CStruct("autd3_command"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct Command { public byte cmd; public ushort len; public fixed byte payload[624]; }

    [CStruct("autd3_transition"), StructLayout(LayoutKind.Sequential)]
    public struct Transition { public int mode; public ulong value; public uint margin_ns; }

    [CStruct("autd3_pattern_stm"), StructLayout(LayoutKind.Sequential)]
    public struct PatternStm
    {
        public IntPtr drives; public UIntPtr size; public ushort divider; public ushort rep; public byte bank;
        public Transition transition; public byte later; public int compression;
    }

    [CStruct("autd3_control_point"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct ControlPoint { public fixed float pos[3]; public byte phase_offset; }

    [CStruct("autd3_foci_stm"), StructLayout(LayoutKind.Sequential)]
    public struct FociStm
    {
        public IntPtr points; public IntPtr intensities; public UIntPtr size; public byte num_foci; public ushort divider;
        public ushort rep; public byte bank; public Transition transition; public byte later;
    }

    [CStruct("autd3_modulation"), StructLayout(LayoutKind.Sequential)]
    public struct Modulation
    {
        public IntPtr data; public UIntPtr size; public ushort divider; public ushort rep; public byte bank;
        public Transition transition; public byte later;
    }

    [CStruct("autd3_gpio_out"), StructLayout(LayoutKind.Sequential)]
    public struct GpioOut { public int type; public ulong value; }

    [CStruct("autd3_frame_buffer"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct FrameBuffer { public UIntPtr num_devices; public fixed byte cmds[128]; public fixed byte payloads[128 * 624]; }

    [CStruct("autd3_gain"), StructLayout(LayoutKind.Sequential)]
    public unsafe struct Gain { public int kind; public fixed float pos[3]; public fixed float dir[3]; public float theta; public byte intensity; public byte phase_offset; }

    [CStruct("autd3_remote_server_option"), StructLayout(LayoutKind.Sequential)]
    public struct RemoteServerOption
    {
        public uint size; public IntPtr listen; public LinkOption link; public ushort devices;
        public uint handshake_timeout_ms, stall_timeout_ms, idle_timeout_ms, max_connections, log_lines_per_s, min_period_us, pickup_percent;
        public byte advertise; public IntPtr advertise_instance;
        public IntPtr log;     // always IntPtr.Zero from C#: no callback into managed code
        public IntPtr log_ctx;
        public int rt_priority, rt_cpu;
    }

    /// <summary>The 0.3.0 layout the exported autd3_remote_server_option_default returns by value; use autd3_remote_server_option_init.</summary>
    [CStruct("autd3_remote_server_option_0_3"), StructLayout(LayoutKind.Sequential)]
    public struct RemoteServerOption03
    {
        public uint size; public IntPtr listen; public LinkOption link; public ushort devices;
        public uint handshake_timeout_ms, stall_timeout_ms, idle_timeout_ms, max_connections, log_lines_per_s, min_period_us, pickup_percent;
        public byte advertise; public IntPtr advertise_instance;
        public IntPtr log, log_ctx;
    }

    [CStruct("autd3_remote_server_stats"), StructLayout(LayoutKind.Sequential)]
    public struct RemoteServerStats { public ulong clients, refused, requests, dropped, bus_cycles, bus_cpu_ns, net_cpu_ns; }

    /// <summary>The exported functions of libautd3 (and the two register functions of the separate link libraries).</summary>
    public static unsafe class Lib
    {
        public const string Name = "autd3";
        const CallingConvention CC = CallingConvention.Cdecl;

        // version.h, error.h, proto.h
        [DllImport(Name, CallingConvention = CC)] public static extern uint autd3_version();
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_version_string();
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_strerror(int err);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_err_name(int err);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_last_error();
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_cmd_name(byte cmd);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_dev_err_message(byte code);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_v12_err_message(byte err);
        [DllImport(Name, CallingConvention = CC)] public static extern Frame autd3_frame_simple(byte cmd);
        [DllImport(Name, CallingConvention = CC)] public static extern Frame autd3_frame_set_mode(int mode);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_frame_xor_hash(out Frame f, ushort sleep_ms, byte[] data, UIntPtr len);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_frame_xor_hash_bench(out Frame f, ushort sleep_ms, UIntPtr len);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_tx_encode(byte[] tx, byte seq, byte cmd, byte[] payload, UIntPtr len);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_v12_frame(out Frame f, byte[] op1, UIntPtr len1, byte[] op2, UIntPtr len2);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_v12_tx_encode(byte[] tx, byte msg_id, ushort slot_2_offset, byte[] ops, UIntPtr len);

        // geometry.h
        [DllImport(Name, CallingConvention = CC)] public static extern DevicePose autd3_device_pose_at(float x, float y, float z);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_geometry_create(UIntPtr n, DevicePose[] poses, out IntPtr geo);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_geometry_free(IntPtr geo);
        [DllImport(Name, CallingConvention = CC)] public static extern UIntPtr autd3_geometry_num_devices(IntPtr geo);
        [DllImport(Name, CallingConvention = CC)] public static extern UIntPtr autd3_geometry_num_transducers(IntPtr geo, UIntPtr dev);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_geometry_transducer(IntPtr geo, UIntPtr dev, UIntPtr tr, float[] pos, float[] dir);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_geometry_set_sound_speed(IntPtr geo, float mm_per_s);
        [DllImport(Name, CallingConvention = CC)] public static extern float autd3_geometry_sound_speed(IntPtr geo);

        // emulator.h
        [DllImport(Name, CallingConvention = CC)] public static extern TimingModel autd3_timing_model_default();
        [DllImport(Name, CallingConvention = CC)] public static extern TimingModel autd3_timing_model_pessimistic();
        [DllImport(Name, CallingConvention = CC)] public static extern TimingModel autd3_timing_model_ideal();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_timing_model_parse([MarshalAs(UnmanagedType.LPStr)] string s, out TimingModel t);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emu_firmware_parse([MarshalAs(UnmanagedType.LPStr)] string s, out int fw);
        [DllImport(Name, CallingConvention = CC)] public static extern EmulatorOption autd3_emulator_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_inject(IntPtr link, ushort dev, ref DeviceFault f);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_power_cycle(IntPtr link, ushort dev);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_counters(IntPtr link, ushort dev, out DeviceCounters c);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_counters_sized(IntPtr link, ushort dev, out DeviceCounters c, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_log_drain(IntPtr link, ushort dev, [Out] ExecEntry[] o, UIntPtr cap, out UIntPtr n, out ulong dropped);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_output(IntPtr link, ushort dev, out OutputState s);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_outputs(IntPtr link, out IntPtr outputs);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_emulator_outputs_read(IntPtr outputs, ushort dev, out OutputState s);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_emulator_outputs_release(IntPtr outputs);

        // link.h and the link options
        [DllImport(Name, CallingConvention = CC)] public static extern LinkOption autd3_link_option_default(int kind);
        [DllImport(Name, CallingConvention = CC)] public static extern EthercatOption* autd3_link_option_ethercat(ref LinkOption o);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_kind_parse([MarshalAs(UnmanagedType.LPStr)] string name, out int kind);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_link_kind_name(int kind);
        [DllImport(Name, CallingConvention = CC)] [return: MarshalAs(UnmanagedType.U1)] public static extern bool autd3_link_kind_available(int kind);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_open(ref LinkOption o, IntPtr geo, out IntPtr link);
        [DllImport(Name, CallingConvention = CC)] public static extern UIntPtr autd3_link_num_devices(IntPtr link);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_kind(IntPtr link);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_cycle(IntPtr link, byte[] tx, [Out] byte[] rx, [MarshalAs(UnmanagedType.U1)] out bool rx_valid);
        // dev_valid: one C bool (1 byte) per device, 1 = that device's inputs are its answer to this cycle.
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_cycle_devices(IntPtr link, byte[] tx, [Out] byte[] rx, [MarshalAs(UnmanagedType.U1)] out bool rx_valid, [Out] byte[] dev_valid);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_wait_next_cycle(IntPtr link);
        [DllImport(Name, CallingConvention = CC)] public static extern uint autd3_link_device_resets(IntPtr link, ushort dev);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_link_stats(IntPtr link, out LinkStats s);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_link_stats_sized(IntPtr link, out LinkStats s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_device_info_sized(IntPtr link, ushort dev, out LinkDeviceInfo s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_check_state(IntPtr link, out LinkStatus s);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_link_check_state_sized(IntPtr link, out LinkStatus s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern UIntPtr autd3_link_diagnostics(IntPtr link, byte[] buf, UIntPtr cap);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_link_close(IntPtr link);
        [DllImport(Name, CallingConvention = CC)] public static extern EthercatOption autd3_ethercat_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_ethercat_option_validate(ref EthercatOption o);
        [DllImport(Name, CallingConvention = CC)] public static extern EchocatOption autd3_echocat_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern SoemOption autd3_soem_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern EthercrabOption autd3_ethercrab_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern TwincatOption autd3_twincat_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern RemoteOption autd3_remote_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_remote_discover(uint timeout_ms, [Out] RemoteFound[] o, UIntPtr cap, out UIntPtr n);
        /// <summary>In libautd3-link-soem (GPL-3.0-only), not libautd3.</summary>
        [DllImport("autd3-link-soem", CallingConvention = CC)] public static extern void autd3_link_soem_register();
        /// <summary>In libautd3-link-ethercrab, not libautd3.</summary>
        [DllImport("autd3-link-ethercrab", CallingConvention = CC)] public static extern void autd3_link_ethercrab_register();

        // client.h
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_client_config_init(out ClientConfig c, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern ClientConfig autd3_client_config_default();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_config_validate(ref ClientConfig c);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_response_check(ref Response r, out int device, out byte code);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_open(IntPtr geo, ref LinkOption link, ref ClientConfig config, out IntPtr client);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_send(IntPtr client, ref Frame frame, out IntPtr req);
        /// <summary>autd3_client_send with `req` NULL (fire and forget).</summary>
        [DllImport(Name, CallingConvention = CC, EntryPoint = "autd3_client_send")] public static extern int autd3_client_send_detached(IntPtr client, ref Frame frame, IntPtr req_null);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_request_wait(IntPtr req, out Response resp);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_request_wait_for(IntPtr req, uint timeout_ms, out Response resp);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_request_poll(IntPtr req, out Response resp);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_request_detach(IntPtr req);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_send_checked(IntPtr client, ref Frame frame, out Response resp);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_read_firmware_version(IntPtr client, [Out] FwVersion[] o);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_read_error_detail(IntPtr client, [Out] byte[] o);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_read_fpga_state(IntPtr client, [Out] byte[] o);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_protocol(IntPtr client);
        [DllImport(Name, CallingConvention = CC)] public static extern UIntPtr autd3_client_num_devices(IntPtr client);
        [DllImport(Name, CallingConvention = CC)] public static extern IntPtr autd3_client_link(IntPtr client);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_client_stats(IntPtr client, out ClientStats s);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_client_stats_sized(IntPtr client, out ClientStats s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern uint autd3_client_device_resets(IntPtr client, ushort dev);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_device_status(IntPtr client, ushort dev, out ClientDeviceStatus s);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_device_status_sized(IntPtr client, ushort dev, out ClientDeviceStatus s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_client_close(IntPtr client);

        // command.h
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_write_pattern(out Command c, byte bank, uint offset, Drive[] drives, UIntPtr n);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_config_pattern(out Command c, byte bank, ushort divider, uint size, ushort rep);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_change_pattern_bank(out Command c, byte bank, ref Transition t);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_write_pattern_fused(out Command c, byte bank, Drive[] drives, ushort divider, ref Transition t);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_silencer_fixed_update_rate(out Command c, ushort intensity, ushort phase);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_silencer_fixed_completion_time(out Command c, ulong intensity_ns, ulong phase_ns, [MarshalAs(UnmanagedType.U1)] bool strict);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_silencer_default(out Command c);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_silencer_disable(out Command c);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_phase_correction(out Command c, byte[] phase);
        /// <summary>`enabled`: 249 C bools (1 byte each).</summary>
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_output_mask(out Command c, byte[] enabled);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_write_pattern_compressed(out Command c, byte bank, uint index, int format, byte[] phases, UIntPtr count);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_pattern_stm_commands(ref PatternStm stm, [Out] Command[] o, UIntPtr cap, out UIntPtr n);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_foci_stm_commands(ref FociStm stm, IntPtr geo, UIntPtr dev, [Out] Command[] o, UIntPtr cap, out UIntPtr n);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_write_modulation(out Command c, byte bank, uint offset, byte[] data, UIntPtr n);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_config_modulation(out Command c, byte bank, ushort divider, uint size, ushort rep);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_change_modulation_bank(out Command c, byte bank, ref Transition t);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_write_modulation_fused(out Command c, byte bank, byte[] data, UIntPtr n, ushort divider, ushort rep, ref Transition t);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_modulation_commands(ref Modulation m, [Out] Command[] o, UIntPtr cap, out UIntPtr n);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_modulation_static(byte intensity, IntPtr buf2, out Modulation m);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_modulation_sine(float freq_hz, ushort divider, byte amplitude, byte offset, IntPtr buf, UIntPtr cap, out Modulation m);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_pulse_width_table(out Command c, ushort[] table);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_pulse_width_table_default([Out] ushort[] table);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_force_fan(out Command c, [MarshalAs(UnmanagedType.U1)] bool on);
        /// <summary>`input`: 4 C bools (1 byte each).</summary>
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_emulate_gpio_in(out Command c, byte[] input);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_cmd_gpio_out(out Command c, GpioOut[] outputs);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_frame_buffer_set(IntPtr buf, UIntPtr dev, ref Command c);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_frame_buffer_frame(IntPtr buf, out Frame f);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_frame_broadcast(ref Command c, out Frame f);
        [DllImport(Name, CallingConvention = CC)] public static extern Gain autd3_gain_null();
        [DllImport(Name, CallingConvention = CC)] public static extern Gain autd3_gain_focus(float x, float y, float z);
        [DllImport(Name, CallingConvention = CC)] public static extern Gain autd3_gain_plane(float dx, float dy, float dz);
        [DllImport(Name, CallingConvention = CC)] public static extern Gain autd3_gain_bessel(float x, float y, float z, float dx, float dy, float dz, float theta);
        [DllImport(Name, CallingConvention = CC)] public static extern Gain autd3_gain_uniform(byte phase, byte intensity);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_gain_calc(ref Gain g, IntPtr geo, UIntPtr dev, [Out] Drive[] o);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_gain_frame(ref Gain g, IntPtr geo, IntPtr buf, out Frame f);

        // remote_server.h (the option's `log` callback is never set from C#)
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_remote_server_option_init(out RemoteServerOption o, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern RemoteServerOption03 autd3_remote_server_option_default();
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_remote_server_create(ref RemoteServerOption o, out IntPtr server);
        [DllImport(Name, CallingConvention = CC)] public static extern ushort autd3_remote_server_port(IntPtr server);
        [DllImport(Name, CallingConvention = CC)] public static extern int autd3_remote_server_run(IntPtr server);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_remote_server_stop(IntPtr server);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_remote_server_stats(IntPtr server, out RemoteServerStats s);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_remote_server_stats_sized(IntPtr server, out RemoteServerStats s, UIntPtr size);
        [DllImport(Name, CallingConvention = CC)] public static extern void autd3_remote_server_destroy(IntPtr server);

        /// <summary>A static UTF-8 C string (never freed).</summary>
        public static string Str(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            var b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return System.Text.Encoding.UTF8.GetString(b);
        }
        public static UIntPtr Size<T>() { return (UIntPtr)Marshal.SizeOf(typeof(T)); }
    }
}
