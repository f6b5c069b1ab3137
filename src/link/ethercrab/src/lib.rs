//! The Rust half of libautd3's EtherCrab link: the `ethercrab` crate (a pure
//! Rust EtherCAT MainDevice) behind a small C ABI. `link_ethercrab.c` is the
//! only caller; it implements the link vtable, validates options, paces the
//! cycle and turns the status codes below into `autd3_err_t` + message.
//!
//! The bring-up follows the new-generation EtherCrab link of shinolab/autd3-sdk
//! (`crates/autd3-rs-link-ethercrab/src/link/{open,group}.rs`, `sync.rs`,
//! `state_check.rs`; crate autd3-rs-link-ethercrab 0.7.0):
//! discover, check every name is "AUTD", SYNC0 mode, PRE-OP with PDI, DC
//! alignment (EMA of 0x092C), configure SYNC0, SAFE-OP, 200 warm-up cycles,
//! OP with a working counter that is stable for 5 cycles.
//!
//! Runtime: EtherCrab's std build uses async-io for its socket and timers, so
//! the shim needs no tokio. It owns one thread, the tx/rx thread, running the
//! shim's own tx/rx driver (`TxRx`, below) under `async_io::block_on`; callers
//! block on
//! EtherCrab futures with `futures_lite::future::block_on`. Close stops and
//! joins the tx/rx thread and frees the PDU storage. (async-io keeps one
//! process-wide helper thread of its own once used; it idles.)
//!
//! The state checker and the recovery of power-cycled devices are C's (the
//! EtherCAT recovery shared by every EtherCAT link, src/ecat/recovery.h): the
//! shim gives it register access (`autd3crab_register`).
//! The optional pcap capture is C's (the shared tap of src/nic/capture.h):
//! the shim only calls `OpenArgs::on_adapter` before it opens an adapter.
//!
//! No panic crosses the boundary: every `extern "C"` function runs its body
//! under `catch_unwind` and reports a panic as `CODE_INTERNAL`.

use std::ffi::{CStr, c_char, c_void};
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ethercrab::error::{Error as CrabError, TimeoutError};
use ethercrab::std::ethercat_now;
use ethercrab::subdevice_group::{CycleInfo, DcConfiguration, HasDc, HasPdi, NoDc, PreOp};
use ethercrab::{
    Command, DcSync, DefaultLock, MainDevice, MainDeviceConfig, PduRx, PduStorage, PduTx,
    RegisterAddress, RetryBehaviour, SubDeviceGroup, SubDeviceGroupHandle, SubDeviceState, Timeouts,
    TxRxResponse,
};

/// Version of the C ABI below; `link_ethercrab.c` checks it before any other call.
pub const ABI_VERSION: u32 = 8;

// Status codes; link_ethercrab.c maps them onto autd3_err_t.
const CODE_OK: i32 = 0;
const CODE_INVALID_OPTION: i32 = 1;
const CODE_NO_INTERFACE: i32 = 2;
const CODE_PERMISSION: i32 = 3;
const CODE_NO_DEVICE: i32 = 4;
const CODE_NOT_AUTD: i32 = 5;
const CODE_COUNT_MISMATCH: i32 = 6;
const CODE_SYNC_TIMEOUT: i32 = 7;
const CODE_STATE_TIMEOUT: i32 = 8;
const CODE_IO: i32 = 9;
const CODE_LINK: i32 = 10;
const CODE_INTERNAL: i32 = 11;
const CODE_VERSION: i32 = 12;
/// Not an error: the cycle's frame was lost (PDU timeout / working counter error).
const CODE_LOST: i32 = 13;

const TX_BYTES: usize = 626; // AUTD3_TX_FRAME_BYTES
const RX_BYTES: usize = 2; // AUTD3_RX_FRAME_BYTES
const MAX_SUBDEVICES: usize = 128; // AUTD3_MAX_DEVICES
/// Two AUTD3 process images (2 x 628 bytes) plus the DC FRMW fill one
/// Ethernet frame, so devices are grouped in pairs and every group's frame is
/// exchanged concurrently each cycle (autd3-sdk `link/group.rs`).
const GROUP_SUBDEVICES: usize = 2;
const MAX_GROUPS: usize = MAX_SUBDEVICES / GROUP_SUBDEVICES;
const GROUP_PDI: usize = (TX_BYTES + RX_BYTES) * GROUP_SUBDEVICES;
/// Frames in flight: one per group per cycle plus the state checker's PDUs.
const MAX_FRAMES: usize = 128;
const PDU_DATA: usize = PduStorage::element_size(1486);
const SUBDEVICE_NAME: &str = "AUTD";
const OP_WARMUP_CYCLES: u32 = 200;
const DISCOVER_ATTEMPTS: u32 = 3;
const OP_WKC_STABLE_CYCLES: u32 = 5;
const DC_START_DELAY: Duration = Duration::from_millis(100);
const ALIGN_CHECK_INTERVAL: Duration = Duration::from_millis(10);
const ALIGN_LOOP_SLEEP: Duration = Duration::from_millis(1);
const ALIGN_EMA_ALPHA: f64 = 0.2;
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
const TXRX_EXIT_TIMEOUT: Duration = Duration::from_secs(1);
/// Bring-up holds EtherCrab's fixed-capacity discovery tables on the stack.
const BRINGUP_STACK: usize = 32 << 20;

type Storage = PduStorage<MAX_FRAMES, PDU_DATA>;
type Group<S, DC> = SubDeviceGroup<GROUP_SUBDEVICES, GROUP_PDI, DefaultLock, S, DC>;
type OpGroup = Group<ethercrab::subdevice_group::Op, HasDc>;

/// Options, filled in by C (already validated there).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OpenArgs {
    pub abi_version: u32,
    /// NUL-terminated adapter name, or NULL for auto-detection.
    pub interface: *const c_char,
    pub num_devices: u16,
    pub sync0_period_ns: u32,
    /// In (-period, 2 period); a negative shift is taken as period + shift.
    pub sync0_shift_ns: i32,
    pub sync_tolerance_ns: u32,
    pub sync_timeout_ms: u32,
    pub state_timeout_ms: u32,
    pub op_wait_timeout_ms: u32,
    pub pdu_timeout_ms: u32,
    pub rt_priority: i32,
    pub rt_cpu: i32,
    /// Called (on the bring-up thread) with each adapter's NUL-terminated
    /// name right before the shim opens it, so that C can start its capture
    /// tap before the first bus frame; NULL = no call. A non-zero return is a
    /// status code: the adapter is not used, and `msg` (NUL-terminated,
    /// `cap` bytes) says why.
    pub on_adapter: Option<
        unsafe extern "C" fn(
            user: *mut c_void,
            ifname: *const c_char,
            msg: *mut c_char,
            cap: usize,
        ) -> i32,
    >,
    /// Passed back to `on_adapter`; owned by C, valid during the open call.
    pub on_adapter_user: *mut c_void,
    /// The AUTD3 identity check every EtherCAT link shares (C's
    /// src/ecat/identity.h), called during discovery for each device with the
    /// adapter's name, its ring position, SII vendor id, product code and
    /// name (NUL-terminated); non-zero = a status code (CODE_NOT_AUTD) and
    /// `msg` says why. NULL = only the name is checked (Rust-only use).
    pub check_identity: Option<IdentityFn>,
    /// libautd3's RT policy for a thread the link owns (C's services table
    /// `thread_set_rt`, the one implementation of it), called on the tx/rx
    /// thread with `rt_priority`/`rt_cpu` when either is set; non-zero = a
    /// status code (CODE_PERMISSION) and `msg` says why. NULL with an RT
    /// option set is an error (Rust-only use has no RT policy).
    pub apply_rt: Option<RtFn>,
}

/// See `OpenArgs::apply_rt`.
pub type RtFn = unsafe extern "C" fn(priority: i32, cpu: i32, msg: *mut c_char, cap: usize) -> i32;

/// See `OpenArgs::check_identity`.
pub type IdentityFn = unsafe extern "C" fn(
    ifname: *const c_char,
    position: u16,
    vendor: u32,
    product: u32,
    name: *const c_char,
    msg: *mut c_char,
    cap: usize,
) -> i32;

/// What open found.
#[repr(C)]
pub struct OpenInfo {
    pub num_devices: u16,
    pub expected_wkc: u16,
    pub interface: [c_char; 64],
}

/// Result of one cycle.
#[repr(C)]
pub struct CycleOut {
    pub working_counter: u16,
    pub expected_wkc: u16,
    pub all_op: u8,
    pub rx_valid: u8,
    /// Some group's frame did not come back (the others' did: CODE_OK) (ABI 8).
    pub lost: u8,
    /// EtherCrab's wait from the start of this exchange to the next SYNC0
    /// edge + shift (its own pacing rule; link_ethercrab.c paces from
    /// dc_system_time_ns through a filtered offset instead, see pace()).
    pub next_cycle_wait_ns: u64,
    /// DC system time at which this cycle's frame read the reference device.
    pub dc_system_time_ns: u64,
    /// Per device (discovery order): its inputs came back this cycle, even
    /// when rx_valid is 0 because another device's did not (ABI 8).
    pub dev_valid: [u8; MAX_SUBDEVICES],
}

struct Fail {
    code: i32,
    msg: String,
    /// A PDU or an EEPROM read went unanswered within its timeout: worth one
    /// more try of the bring-up (a lost frame, or a stalled host).
    pdu_timeout: bool,
}

fn fail(code: i32, msg: impl Into<String>) -> Fail {
    Fail {
        code,
        msg: msg.into(),
        pdu_timeout: false,
    }
}

fn crab_fail(what: &str, e: CrabError) -> Fail {
    let code = match e {
        CrabError::Timeout(TimeoutError::StateTransition) => CODE_STATE_TIMEOUT,
        _ => CODE_LINK,
    };
    let mut f = fail(code, format!("ethercrab: {what}: {e}"));
    f.pdu_timeout = matches!(
        e,
        CrabError::Timeout(TimeoutError::Pdu) | CrabError::Timeout(TimeoutError::Eeprom)
    );
    f
}

/// Bring-up attempts on a named adapter when a frame times out (see autd3crab_open).
const BRINGUP_ATTEMPTS: u32 = 3;

fn io_fail(ifname: &str, e: &std::io::Error) -> Fail {
    let code = match e.raw_os_error() {
        Some(libc::ENODEV) | Some(libc::ENXIO) | Some(libc::ENOENT) => CODE_NO_INTERFACE,
        Some(libc::EPERM) | Some(libc::EACCES) => CODE_PERMISSION,
        _ => CODE_IO,
    };
    let hint = if code == CODE_PERMISSION {
        " (raw sockets need CAP_NET_RAW and CAP_NET_ADMIN: run as root or `sudo setcap cap_net_raw,cap_net_admin+ep <binary>`)"
    } else if code == CODE_NO_INTERFACE {
        " (no such network interface)"
    } else {
        ""
    };
    fail(
        code,
        format!("ethercrab: cannot open interface \"{ifname}\": {e}{hint}"),
    )
}

fn is_lost(e: &CrabError) -> bool {
    matches!(e, CrabError::Timeout(_) | CrabError::WorkingCounter { .. })
}

// ---- transport: PDU storage, MainDevice, tx/rx thread ------------------------

struct Transport {
    storage: *mut Storage,
    md: Option<MainDevice<'static>>,
    txrx: Option<(JoinHandle<()>, mpsc::Receiver<()>)>,
    /// Set by the tx/rx thread when EtherCrab's task ended on its own (e.g.
    /// the interface went away): every later PDU would only time out.
    txrx_ended: Arc<Mutex<Option<String>>>,
    /// Received frames EtherCrab rejected (`TxRx::ignored`).
    ignored: Arc<AtomicU64>,
    ifname: String,
    check_identity: Option<IdentityFn>,
}

// SAFETY: `storage` is uniquely owned by the Transport and only freed in Drop;
// PduStorage is designed to be shared between the tx/rx thread and callers.
unsafe impl Send for Transport {}

fn apply_rt(f: Option<RtFn>, priority: i32, cpu: i32) -> Result<(), String> {
    if priority <= 0 && cpu < 0 {
        return Ok(());
    }
    let Some(f) = f else {
        return Err("rt_priority/rt_cpu asked for, but the caller gave no RT policy (apply_rt)".to_owned());
    };
    let mut buf = [0u8; 256];
    // SAFETY: C's hook writes at most `cap` bytes, NUL-terminated, into buf.
    let rc = unsafe { f(priority, cpu, buf.as_mut_ptr().cast(), buf.len()) };
    if rc == CODE_OK {
        return Ok(());
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Err(format!("tx/rx thread: {}", String::from_utf8_lossy(&buf[..end])))
}

/// EtherCAT's EtherType (ETG.1000.4 §5.1): the raw socket only sees these.
const ETHERCAT_ETHERTYPE: u16 = 0x88A4;
/// One receive buffer, reused for every frame: a full Ethernet frame (1514
/// bytes) fits; anything longer is truncated, then rejected and counted.
const RX_BUF: usize = 2048;
/// Frames handled per poll before the driver yields (bounded loops).
const RX_BURST: usize = 64;

/// An AF_PACKET raw socket bound to `ifname` for EtherCAT frames only,
/// non-blocking (the same kind of socket EtherCrab's own std task uses, so it
/// works in a user namespace with CAP_NET_RAW there).
fn open_socket(ifname: &str) -> std::io::Result<OwnedFd> {
    let proto = ETHERCAT_ETHERTYPE.to_be();
    // SAFETY: plain socket(2); the fd is owned right below.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            i32::from(proto),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let cname = std::ffi::CString::new(ifname)
        .map_err(|_| std::io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: all-zero is a valid sockaddr_ll.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = index as i32;
    // SAFETY: bind(2) with a properly sized sockaddr_ll.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// The shim's tx/rx driver, in place of EtherCrab 0.7.1's `tx_rx_task`: that
/// task *ends* with `ReceiveFrame` as soon as `PduRx::receive_frame` rejects a
/// frame, e.g. a reply that arrives after its PDU timed out and its frame
/// slot was freed (`Decode` / `InvalidIndex`), so one late reply on a loaded
/// machine killed the link for good. Here a rejected frame is counted and
/// ignored (as SOEM and echocat drop replies nobody waits for); only socket
/// errors (e.g. the interface was removed) end the task.
struct TxRx<'a> {
    sock: async_io::Async<OwnedFd>,
    tx: PduTx<'a>,
    rx: PduRx<'a>,
    buf: Box<[u8]>,
    ignored: Arc<AtomicU64>,
}

impl TxRx<'_> {
    fn new<'a>(
        ifname: &str,
        tx: PduTx<'a>,
        rx: PduRx<'a>,
        ignored: Arc<AtomicU64>,
    ) -> std::io::Result<TxRx<'a>> {
        Ok(TxRx {
            sock: async_io::Async::new(open_socket(ifname)?)?,
            tx,
            rx,
            buf: vec![0u8; RX_BUF].into_boxed_slice(),
            ignored,
        })
    }

    /// Send every frame EtherCrab has queued. Err = the socket failed.
    fn send_all(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let fd = self.sock.as_raw_fd();
        while let Some(frame) = self.tx.next_sendable_frame() {
            let mut err = None;
            let res = frame.send_blocking(|data| {
                // SAFETY: send(2) of a valid slice on our socket.
                let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), 0) };
                if n >= 0 {
                    return Ok(n as usize);
                }
                err = Some(std::io::Error::last_os_error());
                Err(CrabError::SendFrame)
            });
            match (res, err) {
                (Ok(_), _) => {}
                (Err(_), Some(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    // The frame stays queued (send_blocking released its
                    // claim); retry once the socket can take it.
                    if self.sock.poll_writable(cx).is_ready() {
                        cx.waker().wake_by_ref();
                    }
                    return Ok(());
                }
                (Err(_), Some(e)) => return Err(format!("failed to send an EtherCAT frame: {e}")),
                (Err(e), None) => return Err(format!("failed to send an EtherCAT frame: {e}")),
            }
        }
        Ok(())
    }

    /// Hand every received frame to EtherCrab. Err = the socket failed.
    fn receive_all(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let fd = self.sock.as_raw_fd();
        for _ in 0..RX_BURST {
            // SAFETY: recv(2) into our own buffer.
            let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::Interrupted => continue,
                    std::io::ErrorKind::WouldBlock => match self.sock.poll_readable(cx) {
                        Poll::Pending => return Ok(()),
                        Poll::Ready(Ok(())) => continue,
                        Poll::Ready(Err(e)) => {
                            return Err(format!("failed to wait for an EtherCAT frame: {e}"));
                        }
                    },
                    _ => return Err(format!("failed to receive an EtherCAT frame: {e}")),
                }
            }
            let len = (n as usize).min(self.buf.len());
            if self.rx.receive_frame(&self.buf[..len]).is_err() {
                self.ignored.fetch_add(1, Ordering::Relaxed);
            }
        }
        // More may be waiting: come back after the other work of this poll.
        cx.waker().wake_by_ref();
        Ok(())
    }
}

impl Future for TxRx<'_> {
    /// Ok when `MainDevice::release_all` asked the driver to exit.
    type Output = Result<(), String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // EtherCrab wakes this waker when it queues a frame to send.
        this.tx.replace_waker(cx.waker());
        if this.tx.should_exit() {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = this.send_all(cx).and_then(|()| this.receive_all(cx)) {
            return Poll::Ready(Err(e));
        }
        Poll::Pending
    }
}

impl Transport {
    fn open(
        ifname: &str,
        timeouts: Timeouts,
        rt_priority: i32,
        rt_cpu: i32,
        args: &OpenArgs,
    ) -> Result<Self, Fail> {
        // C's capture tap must see EtherCrab's first frame.
        notify_adapter(args, ifname)?;
        let storage = Box::into_raw(Box::new(Storage::new()));
        // SAFETY: the allocation lives until Drop, which frees it only after the
        // tx/rx thread has exited and the MainDevice has been released.
        let st: &'static Storage = unsafe { &*storage };
        let free = || drop(unsafe { Box::from_raw(storage) });
        let Ok((pdu_tx, pdu_rx, pdu_loop)) = st.try_split() else {
            free();
            return Err(fail(CODE_INTERNAL, "ethercrab: PDU storage already split"));
        };
        let ignored = Arc::new(AtomicU64::new(0));
        let task = match TxRx::new(ifname, pdu_tx, pdu_rx, Arc::clone(&ignored)) {
            Ok(t) => t,
            Err(e) => {
                let _ = pdu_loop;
                free();
                return Err(io_fail(ifname, &e));
            }
        };
        let md = MainDevice::new(
            pdu_loop,
            timeouts,
            MainDeviceConfig {
                dc_static_sync_iterations: 10_000,
                retry_behaviour: RetryBehaviour::None,
            },
        );
        let rt_fn = args.apply_rt;
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let txrx_ended = Arc::new(Mutex::new(None));
        let ended = Arc::clone(&txrx_ended);
        let spawned = std::thread::Builder::new()
            .name("autd3-crab-txrx".into())
            .spawn(move || {
                let rt = apply_rt(rt_fn, rt_priority, rt_cpu);
                let ok = rt.is_ok();
                let _ = ready_tx.send(rt);
                if ok {
                    // The task returns Ok when MainDevice::release_all asks it to exit.
                    let why = match catch_unwind(AssertUnwindSafe(|| async_io::block_on(task))) {
                        Ok(Ok(_)) => "stopped".to_owned(),
                        Ok(Err(e)) => format!("failed: {e}"),
                        Err(p) => panic_msg(&*p),
                    };
                    *ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                }
                let _ = done_tx.send(());
            });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                // The task (and the PduTx/PduRx inside it) went with the closure.
                // SAFETY: nothing else borrows the storage now.
                unsafe {
                    let _ = md.release_all();
                }
                free();
                return Err(fail(
                    CODE_IO,
                    format!("ethercrab: cannot start the tx/rx thread: {e}"),
                ));
            }
        };
        let t = Transport {
            storage,
            md: Some(md),
            txrx: Some((handle, done_rx)),
            txrx_ended,
            ignored,
            ifname: ifname.to_owned(),
            check_identity: args.check_identity,
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(t),
            // Dropping `t` stops and joins the tx/rx thread.
            Ok(Err(msg)) => Err(fail(CODE_PERMISSION, format!("ethercrab: {msg}"))),
            Err(_) => Err(fail(
                CODE_INTERNAL,
                "ethercrab: tx/rx thread ended before starting",
            )),
        }
    }

    fn md(&self) -> &MainDevice<'static> {
        self.md.as_ref().expect("MainDevice is taken only in Drop")
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        if let Some(md) = self.md.take() {
            // SAFETY: no cycle/check is running (close is exclusive) and the
            // groups built on this MainDevice are never used again. This also
            // tells the tx/rx task to exit.
            let _ = unsafe { md.release_all() };
        }
        let mut stopped = true;
        if let Some((handle, done)) = self.txrx.take() {
            stopped = done.recv_timeout(TXRX_EXIT_TIMEOUT).is_ok();
            if stopped {
                let _ = handle.join();
            }
        }
        if stopped {
            // SAFETY: from Box::into_raw in open; the tx/rx thread has exited.
            drop(unsafe { Box::from_raw(self.storage) });
        }
        // else: leak the storage rather than free memory a stuck thread may touch.
    }
}

// ---- the adapter hook (C's capture tap) ----------------------------------------

/// Tell C which adapter is about to be opened (`OpenArgs::on_adapter`).
fn notify_adapter(args: &OpenArgs, ifname: &str) -> Result<(), Fail> {
    let Some(hook) = args.on_adapter else {
        return Ok(());
    };
    let cname = std::ffi::CString::new(ifname)
        .map_err(|_| fail(CODE_NO_INTERFACE, "ethercrab: bad interface name"))?;
    let mut msg = [0 as c_char; 512];
    // SAFETY: C passed the hook and its user pointer for the duration of the
    // open call; the name and the message buffer are valid for the call.
    let rc = unsafe {
        hook(
            args.on_adapter_user,
            cname.as_ptr(),
            msg.as_mut_ptr(),
            msg.len(),
        )
    };
    if rc == CODE_OK {
        return Ok(());
    }
    msg[msg.len() - 1] = 0;
    // SAFETY: NUL-terminated just above.
    let text = unsafe { CStr::from_ptr(msg.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Err(fail(
        rc,
        if text.is_empty() {
            format!("ethercrab: adapter \"{ifname}\" refused by the C glue")
        } else {
            text
        },
    ))
}

// ---- concurrent DC exchange over all groups (no heap allocation here) ---------

struct Agg {
    working_counter: u16,
    all_op: bool,
    /// Some group's frame was lost (its devices' inputs are not in rx).
    any_lost: bool,
    next_cycle_wait: Duration,
    dc_system_time: u64,
    /// Per device: its inputs came back (group_devices_valid).
    dev_valid: [bool; MAX_SUBDEVICES],
}

/// Which devices of one group answered its exchange: the group's frame
/// carries its LRW and an AL status read (FPRD) per device, in one pass, so a
/// device that read OP there processed the LRW too; the LRW's working counter
/// must then be `per_device` for each of them and nothing else (a device not
/// in OP that still counted would make the sum ambiguous: none is taken).
/// No allocation: the verdicts go to `out` (the group's devices, in order).
fn group_devices_valid(working_counter: u16, states: &[SubDeviceState], per_device: u16, out: &mut [bool]) {
    let op = states.iter().filter(|s| **s == SubDeviceState::Op).count() as u16;
    let sum_ok = per_device > 0 && working_counter == op.saturating_mul(per_device);
    for (o, s) in out.iter_mut().zip(states.iter().chain(std::iter::repeat(&SubDeviceState::None))) {
        *o = sum_ok && *s == SubDeviceState::Op;
    }
}

/// One `tx_rx_dc` per group, all in flight at once; waits for every group
/// (so no PDU is abandoned mid-flight). A group whose frame was lost costs
/// only its devices (Agg::dev_valid, any_lost); the exchange fails with the
/// first error only if every group's was lost, or with any other error.
/// `per_device` = the working counter one device adds (expected / devices).
async fn exchange<S: HasPdi>(
    groups: &[Group<S, HasDc>],
    md: &MainDevice<'_>,
    per_device: u16,
) -> Result<Agg, CrabError> {
    type Resp = Result<TxRxResponse<GROUP_SUBDEVICES, CycleInfo>, CrabError>;
    let mut futs: heapless::Vec<_, MAX_GROUPS> = heapless::Vec::new();
    for g in groups.iter().take(MAX_GROUPS) {
        let _ = futs.push(Some(g.tx_rx_dc(md)));
    }
    let mut results: heapless::Vec<Option<Resp>, MAX_GROUPS> = heapless::Vec::new();
    for _ in 0..futs.len() {
        let _ = results.push(None);
    }
    let mut futs = pin!(futs);
    std::future::poll_fn(|cx| {
        // SAFETY: the vector is pinned and never moved; each element is
        // polled in place and dropped in place (set to None) when done.
        let futs = unsafe { futs.as_mut().get_unchecked_mut() };
        let mut pending = false;
        for (slot, res) in futs.iter_mut().zip(results.iter_mut()) {
            if let Some(f) = slot.as_mut() {
                match unsafe { Pin::new_unchecked(f) }.poll(cx) {
                    Poll::Ready(r) => {
                        *res = Some(r);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    let mut agg = Agg {
        working_counter: 0,
        all_op: true,
        any_lost: false,
        next_cycle_wait: Duration::ZERO,
        dc_system_time: 0,
        dev_valid: [false; MAX_SUBDEVICES],
    };
    let mut first_err = None;
    let mut first_lost = None;
    let mut any_ok = false;
    let mut k = 0usize;
    for (r, g) in results.into_iter().zip(groups.iter()) {
        let len = g.len().min(MAX_SUBDEVICES - k);
        match r {
            Some(Ok(resp)) => {
                agg.working_counter = agg.working_counter.saturating_add(resp.working_counter);
                agg.all_op &= resp.all_op();
                agg.next_cycle_wait = agg.next_cycle_wait.max(resp.extra.next_cycle_wait);
                if !any_ok {
                    agg.dc_system_time = resp.extra.dc_system_time;
                }
                any_ok = true;
                group_devices_valid(
                    resp.working_counter,
                    &resp.subdevice_states,
                    per_device,
                    &mut agg.dev_valid[k..k + len],
                );
            }
            Some(Err(e)) if is_lost(&e) => {
                agg.any_lost = true;
                agg.all_op = false;
                if first_lost.is_none() {
                    first_lost = Some(e);
                }
            }
            Some(Err(e)) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
            None => {
                if first_err.is_none() {
                    first_err = Some(CrabError::Internal);
                }
            }
        }
        k += len;
    }
    match (first_err, first_lost) {
        (Some(e), _) => Err(e),
        (None, Some(e)) if !any_ok => Err(e),
        _ => Ok(agg),
    }
}

// ---- bring-up -------------------------------------------------------------------

pub struct Link {
    groups: Vec<OpGroup>,
    addresses: Vec<u16>,
    expected_wkc: u16,
    transport: Transport,
}

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
}

/// Adapters that are up, not loopback, not wireless, by name. getifaddrs
/// (netlink) sees the caller's network namespace; /sys/class/net may not.
fn candidate_interfaces() -> Vec<String> {
    let mut names = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return names;
        }
        let mut p = ifap;
        while !p.is_null() {
            let ifa = &*p;
            let flags = ifa.ifa_flags;
            if !ifa.ifa_name.is_null()
                && flags & libc::IFF_UP as u32 != 0
                && flags & libc::IFF_LOOPBACK as u32 == 0
            {
                let n = CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
                if !names.contains(&n)
                    && !std::path::Path::new(&format!("/sys/class/net/{n}/wireless")).exists()
                {
                    names.push(n);
                }
            }
            p = ifa.ifa_next;
        }
        libc::freeifaddrs(ifap);
    }
    names.sort();
    names
}

/// Scan the bus, retrying when nothing answered: a frame can be lost while a
/// link is still coming up, and EtherCrab does not retry PDUs by itself.
async fn discover(t: &Transport) -> Result<Vec<Group<PreOp, NoDc>>, Fail> {
    let mut attempt = 1;
    loop {
        match discover_once(t).await {
            Err(f) if f.code == CODE_NO_DEVICE && attempt < DISCOVER_ATTEMPTS => attempt += 1,
            r => return r,
        }
    }
}

/// Whether device `i` fails the AUTD3 identity check: C's shared check
/// (`OpenArgs::check_identity`) with its message, or without it the name only.
fn identity_error(
    t: &Transport,
    i: usize,
    name: &str,
    id: ethercrab::SubDeviceIdentity,
) -> Option<String> {
    let Some(check) = t.check_identity else {
        return (name != SUBDEVICE_NAME).then(|| {
            format!(
                "ethercrab: device at position {i} on interface {} (name \"{name}\") is not an AUTD3 device",
                t.ifname
            )
        });
    };
    let ifname = std::ffi::CString::new(t.ifname.as_str()).unwrap_or_default();
    let cname = std::ffi::CString::new(name).unwrap_or_default();
    let mut msg = [0 as c_char; 512];
    // SAFETY: C's check reads the two NUL-terminated strings and writes at
    // most `msg.len()` bytes (NUL included) into `msg`, during the call only.
    let rc = unsafe {
        check(
            ifname.as_ptr(),
            u16::try_from(i).unwrap_or(u16::MAX),
            id.vendor_id,
            id.product_id,
            cname.as_ptr(),
            msg.as_mut_ptr(),
            msg.len(),
        )
    };
    if rc == CODE_OK {
        return None;
    }
    msg[msg.len() - 1] = 0;
    // SAFETY: NUL-terminated just above.
    Some(
        unsafe { CStr::from_ptr(msg.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Scan the bus once: every SubDevice must be an AUTD3 (identity_error); pairs go into groups.
async fn discover_once(t: &Transport) -> Result<Vec<Group<PreOp, NoDc>>, Fail> {
    let md = t.md();
    let groups: Vec<Group<PreOp, NoDc>> = (0..MAX_GROUPS).map(|_| Group::default()).collect();
    let mut idx = 0usize;
    let mut not_autd: Option<String> = None;
    let res = md
        .init::<MAX_SUBDEVICES, _>(
            ethercat_now,
            groups,
            |groups: &Vec<Group<PreOp, NoDc>>, sd| {
                let i = idx;
                idx += 1;
                if let Some(msg) = identity_error(t, i, sd.name(), sd.identity()) {
                    not_autd = Some(msg);
                    return Err(CrabError::UnknownSubDevice);
                }
                match groups.get(i / GROUP_SUBDEVICES) {
                    Some(g) => Ok(g as &dyn SubDeviceGroupHandle),
                    None => Err(CrabError::UnknownSubDevice),
                }
            },
        )
        .await;
    if let Some(msg) = not_autd {
        return Err(fail(CODE_NOT_AUTD, msg));
    }
    let groups = match res {
        Ok(g) => g,
        Err(e) if md.num_subdevices() == 0 && matches!(e, CrabError::Timeout(_)) => {
            return Err(fail(
                CODE_NO_DEVICE,
                format!(
                    "ethercrab: no EtherCAT reply on \"{}\" (no device connected?): {e}",
                    t.ifname
                ),
            ));
        }
        Err(e) if idx > MAX_SUBDEVICES => {
            return Err(fail(
                CODE_COUNT_MISMATCH,
                format!(
                    "ethercrab: more than {MAX_SUBDEVICES} devices on \"{}\": {e}",
                    t.ifname
                ),
            ));
        }
        Err(e) => return Err(crab_fail(&format!("scanning \"{}\"", t.ifname), e)),
    };
    let groups: Vec<_> = groups.into_iter().filter(|g| !g.is_empty()).collect();
    if groups.is_empty() {
        return Err(fail(
            CODE_NO_DEVICE,
            format!("ethercrab: no EtherCAT device found on \"{}\"", t.ifname),
        ));
    }
    Ok(groups)
}

// DC system time difference (0x092C) is sign-magnitude, not two's complement
// (ETG.1000.4; autd3-sdk sync.rs).
fn sysdiff_ns(raw: u32) -> f64 {
    let mag = f64::from(raw & 0x7FFF_FFFF);
    if raw & 0x8000_0000 != 0 { -mag } else { mag }
}

async fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        async_io::Timer::at(t).await;
    }
}

async fn wait_for_align<S: HasPdi>(
    groups: &[Group<S, NoDc>],
    md: &MainDevice<'_>,
    addresses: &[u16],
    tolerance: Duration,
    timeout: Duration,
) -> Result<(), Fail> {
    let mut ema: Vec<Option<f64>> = vec![None; addresses.len()];
    let start = Instant::now();
    let mut last_check = start;
    loop {
        for g in groups {
            g.tx_rx_sync_system_time(md)
                .await
                .map_err(|e| crab_fail("DC alignment", e))?;
        }
        if last_check.elapsed() >= ALIGN_CHECK_INTERVAL {
            last_check = Instant::now();
            let mut worst = (0.0f64, 0usize);
            for (i, (&addr, avg)) in addresses.iter().zip(ema.iter_mut()).enumerate() {
                let diff = match Command::fprd(addr, RegisterAddress::DcSystemTimeDifference.into())
                    .receive::<u32>(md)
                    .await
                {
                    Ok(raw) => sysdiff_ns(raw),
                    Err(CrabError::WorkingCounter { .. }) => 0.0,
                    Err(e) => return Err(crab_fail("reading DC system time difference", e)),
                };
                let cur = avg.get_or_insert(diff);
                *cur = ALIGN_EMA_ALPHA * diff + (1.0 - ALIGN_EMA_ALPHA) * *cur;
                if cur.abs() > worst.0 {
                    worst = (cur.abs(), i);
                }
            }
            if worst.0 < tolerance.as_nanos() as f64 {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(fail(
                    CODE_SYNC_TIMEOUT,
                    format!(
                        "ethercrab: DC clocks did not align within {} ms: device {} deviates {:.0} ns (tolerance {} ns)",
                        timeout.as_millis(),
                        worst.1,
                        worst.0,
                        tolerance.as_nanos()
                    ),
                ));
            }
        }
        async_io::Timer::after(ALIGN_LOOP_SLEEP).await;
    }
}

fn al_state_name(s: u16) -> &'static str {
    match s & 0x0F {
        1 => "INIT",
        2 => "PRE-OP",
        3 => "BOOT",
        4 => "SAFE-OP",
        8 => "OP",
        _ => "UNKNOWN",
    }
}

async fn describe_states(md: &MainDevice<'_>, addresses: &[u16]) -> String {
    let mut s = String::new();
    for (i, &a) in addresses.iter().enumerate() {
        let st = Command::fprd(a, RegisterAddress::AlStatus.into())
            .receive::<u16>(md)
            .await;
        let code = Command::fprd(a, RegisterAddress::AlStatusCode.into())
            .receive::<u16>(md)
            .await;
        match (st, code) {
            (Ok(st), Ok(code)) => s.push_str(&format!(
                "; device {i}: {}{} (AL status code 0x{code:04x})",
                al_state_name(st),
                if st & 0x10 != 0 { "+ERROR" } else { "" }
            )),
            _ => s.push_str(&format!("; device {i}: no reply")),
        }
    }
    s
}

async fn bring_up(args: &OpenArgs, iface: Option<String>) -> Result<Link, Fail> {
    let timeouts = Timeouts {
        state_transition: ms(args.state_timeout_ms),
        pdu: ms(args.pdu_timeout_ms),
        // EtherCrab's default EEPROM wait is 10 ms; one scheduling stall of a
        // loaded host (or emulator) longer than that failed open in tests.
        eeprom: ms(args.pdu_timeout_ms).max(Timeouts::default().eeprom),
        ..Timeouts::default()
    };
    let (transport, groups) = match iface {
        Some(name) => {
            let t = Transport::open(&name, timeouts, args.rt_priority, args.rt_cpu, args)?;
            let g = discover(&t).await?;
            (t, g)
        }
        None => {
            // "auto": the first adapter whose devices are all AUTD3 (autd3-sdk utils.rs).
            let mut tried = Vec::new();
            let mut found = None;
            for name in candidate_interfaces() {
                let t = match Transport::open(&name, timeouts, args.rt_priority, args.rt_cpu, args)
                {
                    Ok(t) => t,
                    Err(f) => {
                        tried.push(format!(
                            "{name}: {}",
                            f.msg.trim_start_matches("ethercrab: ")
                        ));
                        continue;
                    }
                };
                match discover(&t).await {
                    Ok(g) => {
                        found = Some((t, g));
                        break;
                    }
                    Err(f) => tried.push(format!(
                        "{name}: {}",
                        f.msg.trim_start_matches("ethercrab: ")
                    )),
                }
            }
            match found {
                Some(x) => x,
                None => {
                    return Err(fail(
                        CODE_NO_DEVICE,
                        format!(
                            "ethercrab: no adapter with AUTD3 devices found (interface \"auto\"; tried: {})",
                            if tried.is_empty() {
                                "no adapter is up".to_owned()
                            } else {
                                tried.join(", ")
                            }
                        ),
                    ));
                }
            }
        }
    };
    let md = transport.md();
    let mut groups = groups;
    let found: usize = groups.iter().map(|g| g.len()).sum();
    if found != usize::from(args.num_devices) {
        return Err(fail(
            CODE_COUNT_MISMATCH,
            format!(
                "ethercrab: found {found} AUTD3 device(s) on \"{}\" but the geometry has {}",
                transport.ifname, args.num_devices
            ),
        ));
    }
    for g in groups.iter_mut() {
        for mut sd in g.iter_mut(md) {
            sd.set_dc_sync(DcSync::Sync0);
        }
    }
    let addresses: Vec<u16> = groups
        .iter()
        .flat_map(|g| g.iter(md).map(|sd| sd.configured_address()))
        .collect();

    let mut pdi = Vec::with_capacity(groups.len());
    for g in groups {
        pdi.push(
            g.into_pre_op_pdi(md)
                .await
                .map_err(|e| crab_fail("PRE-OP", e))?,
        );
    }

    wait_for_align(
        &pdi,
        md,
        &addresses,
        Duration::from_nanos(u64::from(args.sync_tolerance_ns)),
        ms(args.sync_timeout_ms),
    )
    .await?;

    let period = u64::from(args.sync0_period_ns);
    let shift = if args.sync0_shift_ns < 0 {
        period - u64::from(args.sync0_shift_ns.unsigned_abs())
    } else {
        args.sync0_shift_ns as u64
    };
    let dc = DcConfiguration {
        start_delay: DC_START_DELAY,
        sync0_period: Duration::from_nanos(period),
        sync0_shift: Duration::from_nanos(shift),
    };
    let mut dcg = Vec::with_capacity(pdi.len());
    for g in pdi {
        dcg.push(
            g.configure_dc_sync(md, dc)
                .await
                .map_err(|e| crab_fail("configuring SYNC0", e))?,
        );
    }
    let mut safe = Vec::with_capacity(dcg.len());
    for g in dcg {
        match g.into_safe_op(md).await {
            Ok(g) => safe.push(g),
            Err(e) => {
                let states = describe_states(md, &addresses).await;
                return Err(fail(
                    if matches!(e, CrabError::Timeout(_)) {
                        CODE_STATE_TIMEOUT
                    } else {
                        CODE_LINK
                    },
                    format!(
                        "ethercrab: devices did not reach SAFE-OP within {} ms: {e}{states}",
                        args.state_timeout_ms
                    ),
                ));
            }
        }
    }
    // Warm-up: run DC-paced cycles so SYNC0 and the host phase settle before OP.
    for _ in 0..OP_WARMUP_CYCLES {
        let t0 = Instant::now();
        let r = exchange(&safe, md, 0)
            .await
            .map_err(|e| crab_fail("DC warm-up", e))?;
        sleep_until(t0 + r.next_cycle_wait).await;
    }
    let mut op = Vec::with_capacity(safe.len());
    for g in safe {
        op.push(
            g.request_into_op(md)
                .await
                .map_err(|e| crab_fail("requesting OP", e))?,
        );
    }
    // OP with a working counter stable for 5 cycles (autd3-sdk open.rs).
    let deadline = Instant::now() + ms(args.op_wait_timeout_ms);
    let mut baseline: Option<u16> = None;
    let mut stable = 0u32;
    let expected_wkc = loop {
        let t0 = Instant::now();
        let next = match exchange(&op, md, 0).await {
            Ok(r) => {
                if r.all_op && baseline == Some(r.working_counter) {
                    stable += 1;
                    if stable >= OP_WKC_STABLE_CYCLES {
                        break r.working_counter;
                    }
                } else if r.all_op {
                    baseline = Some(r.working_counter);
                    stable = 1;
                } else {
                    baseline = None;
                    stable = 0;
                }
                t0 + r.next_cycle_wait
            }
            Err(e) if is_lost(&e) => {
                baseline = None;
                stable = 0;
                Instant::now()
            }
            Err(e) => return Err(crab_fail("waiting for OP", e)),
        };
        if Instant::now() >= deadline {
            let states = describe_states(md, &addresses).await;
            return Err(fail(
                CODE_STATE_TIMEOUT,
                format!(
                    "ethercrab: devices did not reach OP with a stable working counter within {} ms{states}",
                    args.op_wait_timeout_ms
                ),
            ));
        }
        sleep_until(next).await;
    };
    Ok(Link {
        groups: op,
        addresses,
        expected_wkc,
        transport,
    })
}

// ---- close ------------------------------------------------------------------------

/// SYNC0 off and every device back to INIT. Direct OP -> INIT is a legal
/// transition (ETG.1000.6 state machine), and a broadcast reaches devices the
/// group bookkeeping may have lost. Bounded by CLOSE_TIMEOUT.
async fn shutdown(md: &MainDevice<'_>, addresses: &[u16]) {
    for &a in addresses {
        let _ = Command::fpwr(a, RegisterAddress::DcSyncActive.into())
            .ignore_wkc()
            .send(md, 0u8)
            .await;
    }
    let deadline = Instant::now() + CLOSE_TIMEOUT;
    loop {
        let _ = Command::bwr(RegisterAddress::AlControl.into())
            .ignore_wkc()
            .send(md, 0x0001u16)
            .await;
        let mut all_init = true;
        for &a in addresses {
            match Command::fprd(a, RegisterAddress::AlStatus.into())
                .receive::<u16>(md)
                .await
            {
                Ok(s) if s & 0x0F == 0x01 => {}
                Ok(_) => all_init = false,
                Err(_) => {} // gone: nothing to bring down
            }
        }
        if all_init || Instant::now() >= deadline {
            return;
        }
        async_io::Timer::after(Duration::from_millis(10)).await;
    }
}

// ---- register access for C's state checker and recovery --------------------

impl Link {
    /// Read (or write) `buf.len()` bytes of ESC register `reg` of device `dev`
    /// at its station address, or at its ring position (a power-cycled ESC has
    /// lost its address). Ok(false): nobody answered (working counter 0 or no
    /// reply in time).
    async fn register(
        &self,
        dev: usize,
        by_position: bool,
        write: bool,
        reg: u16,
        buf: &mut [u8],
    ) -> Result<bool, CrabError> {
        let md = self.transport.md();
        let len = u16::try_from(buf.len()).map_err(|_| CrabError::Internal)?;
        let r = if write {
            let cmd = if by_position {
                Command::apwr(u16::try_from(dev).map_err(|_| CrabError::Internal)?, reg)
            } else {
                Command::fpwr(self.addresses[dev], reg)
            };
            // send_receive checks the working counter (send alone does not)
            cmd.send_receive_slice(md, &*buf).await.map(|_| ())
        } else {
            let cmd = if by_position {
                Command::aprd(u16::try_from(dev).map_err(|_| CrabError::Internal)?, reg)
            } else {
                Command::fprd(self.addresses[dev], reg)
            };
            cmd.receive_slice(md, len).await.map(|d| buf.copy_from_slice(&d))
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if is_lost(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

// ---- C ABI ----------------------------------------------------------------------------

fn write_msg(buf: *mut c_char, cap: usize, msg: &str) {
    if buf.is_null() || cap == 0 {
        return;
    }
    let mut n = msg.len().min(cap - 1);
    while n > 0 && !msg.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: the caller passes a writable buffer of `cap` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

fn panic_msg(p: &(dyn std::any::Any + Send)) -> String {
    let s = p
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("ethercrab shim: internal panic: {s}")
}

/// The shim's ABI version (ABI_VERSION). Never fails.
#[unsafe(no_mangle)]
pub extern "C" fn autd3crab_abi_version() -> u32 {
    ABI_VERSION
}

/// Open: scan, check, bring every device to OP. Blocking. On success `*out`
/// owns the link (free with autd3crab_close) and `info` is filled.
///
/// # Safety
/// `args`, `out`, `info` valid pointers; `msg` a buffer of `cap` bytes (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_open(
    args: *const OpenArgs,
    out: *mut *mut Link,
    info: *mut OpenInfo,
    msg: *mut c_char,
    cap: usize,
) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), Fail> {
        if args.is_null() || out.is_null() || info.is_null() {
            return Err(fail(CODE_INTERNAL, "ethercrab shim: NULL argument"));
        }
        // SAFETY: checked non-NULL; the caller keeps them valid for the call.
        let (args, out, info) = unsafe { (&*args, &mut *out, &mut *info) };
        *out = std::ptr::null_mut();
        if args.abi_version != ABI_VERSION {
            return Err(fail(
                CODE_VERSION,
                format!(
                    "ethercrab shim ABI {} does not match the C glue's {}",
                    ABI_VERSION, args.abi_version
                ),
            ));
        }
        if args.num_devices == 0
            || usize::from(args.num_devices) > MAX_SUBDEVICES
            || args.sync0_period_ns == 0
        {
            return Err(fail(
                CODE_INVALID_OPTION,
                "ethercrab shim: bad device count or SYNC0 period",
            ));
        }
        let iface = if args.interface.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated string from C.
            let s = unsafe { CStr::from_ptr(args.interface) }
                .to_string_lossy()
                .into_owned();
            if s.is_empty() || s == "auto" {
                None
            } else {
                Some(s)
            }
        };
        // Bring-up runs on its own thread: EtherCrab's discovery tables are
        // large fixed-capacity values, too big for an arbitrary caller's stack.
        // on_adapter/on_adapter_user go along: C keeps them valid until this
        // call returns, and the bring-up thread is joined before that.
        let args_copy = OpenArgs {
            interface: std::ptr::null(),
            ..*args
        };
        let link = std::thread::Builder::new()
            .name("autd3-crab-open".into())
            .stack_size(BRINGUP_STACK)
            .spawn(move || {
                catch_unwind(AssertUnwindSafe(|| {
                    // A frame lost (or answered after its timeout) during the
                    // bring-up of a named adapter starts it over with a fresh
                    // transport, as SOEM retries its configuration reads
                    // (EC_DEFAULTRETRIES): a single lost frame or a stall of a
                    // loaded host must not fail the open. Bounded; any other
                    // error, and "auto" (which tries the next adapter), at once.
                    let mut attempt = 1;
                    loop {
                        match futures_lite::future::block_on(bring_up(&args_copy, iface.clone())) {
                            Err(f) if f.pdu_timeout && iface.is_some() && attempt < BRINGUP_ATTEMPTS => attempt += 1,
                            r => break r,
                        }
                    }
                }))
                .unwrap_or_else(|p| Err(fail(CODE_INTERNAL, panic_msg(&*p))))
            })
            .map_err(|e| {
                fail(
                    CODE_IO,
                    format!("ethercrab: cannot start the bring-up thread: {e}"),
                )
            })?
            .join()
            .unwrap_or_else(|p| Err(fail(CODE_INTERNAL, panic_msg(&*p))))?;
        info.num_devices = link.addresses.len() as u16;
        info.expected_wkc = link.expected_wkc;
        info.interface = [0; 64];
        for (d, s) in info
            .interface
            .iter_mut()
            .zip(link.transport.ifname.bytes().take(63))
        {
            *d = s as c_char;
        }
        *out = Box::into_raw(Box::new(link));
        Ok(())
    }));
    match r {
        Ok(Ok(())) => CODE_OK,
        Ok(Err(f)) => {
            write_msg(msg, cap, &f.msg);
            f.code
        }
        Err(p) => {
            write_msg(msg, cap, &panic_msg(&*p));
            CODE_INTERNAL
        }
    }
}

// SAFETY: the pointers are cleared before the copy crosses threads.
unsafe impl Send for OpenArgs {}

/// One exchange (no pacing: the C side sleeps until the DC-aligned deadline).
/// Returns CODE_OK (see out->rx_valid), CODE_LOST (PDU timeout / working
/// counter error: rx not written), or an error code (fatal for the link).
/// Call from one thread at a time; may run concurrently with autd3crab_register.
///
/// # Safety
/// `link` from autd3crab_open; `tx` n*626 bytes, `rx` n*2 bytes, n = device count.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_cycle(
    link: *const Link,
    tx: *const u8,
    rx: *mut u8,
    out: *mut CycleOut,
    msg: *mut c_char,
    cap: usize,
) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(|| -> i32 {
        // SAFETY: see the function's contract.
        let link = unsafe { &*link };
        let n = link.addresses.len();
        let tx = unsafe { std::slice::from_raw_parts(tx, n * TX_BYTES) };
        let rx = unsafe { std::slice::from_raw_parts_mut(rx, n * RX_BYTES) };
        let out = unsafe { &mut *out };
        let md = link.transport.md();
        let mut k = 0usize;
        for g in &link.groups {
            for sd in g.iter(md) {
                let mut o = sd.outputs_raw_mut();
                let len = o.len().min(TX_BYTES);
                o[..len].copy_from_slice(&tx[k * TX_BYTES..k * TX_BYTES + len]);
                k += 1;
            }
        }
        out.expected_wkc = link.expected_wkc;
        let per_device = if n > 0 { link.expected_wkc / n as u16 } else { 0 };
        match futures_lite::future::block_on(exchange(&link.groups, md, per_device)) {
            Ok(r) => {
                out.working_counter = r.working_counter;
                out.all_op = u8::from(r.all_op);
                out.rx_valid =
                    u8::from(!r.any_lost && r.all_op && r.working_counter == link.expected_wkc);
                out.lost = u8::from(r.any_lost);
                for (o, v) in out.dev_valid.iter_mut().zip(r.dev_valid.iter()).take(n) {
                    *o = u8::from(*v);
                }
                out.next_cycle_wait_ns = r.next_cycle_wait.as_nanos() as u64;
                out.dc_system_time_ns = r.dc_system_time;
                let mut k = 0usize;
                for g in &link.groups {
                    for sd in g.iter(md) {
                        let i = sd.inputs_raw();
                        let dst = &mut rx[k * RX_BYTES..(k + 1) * RX_BYTES];
                        let len = i.len().min(RX_BYTES);
                        dst[..len].copy_from_slice(&i[..len]);
                        dst[len..].fill(0);
                        k += 1;
                    }
                }
                CODE_OK
            }
            Err(e) if is_lost(&e) => {
                // try_lock: never wait on the tx/rx thread here; it writes once, at its end.
                if let Ok(g) = link.transport.txrx_ended.try_lock() {
                    if let Some(why) = g.as_ref() {
                        write_msg(
                            msg,
                            cap,
                            &format!(
                                "ethercrab: the tx/rx task on \"{}\" {why}",
                                link.transport.ifname
                            ),
                        );
                        return CODE_LINK;
                    }
                }
                out.working_counter = 0;
                out.all_op = 0;
                out.rx_valid = 0;
                out.next_cycle_wait_ns = 0;
                CODE_LOST
            }
            Err(e) => {
                // Rare and fatal, so formatting here is acceptable.
                write_msg(msg, cap, &format!("ethercrab: bus cycle failed: {e}"));
                CODE_LINK
            }
        }
    }));
    r.unwrap_or_else(|p| {
        write_msg(msg, cap, &panic_msg(&*p));
        CODE_INTERNAL
    })
}

/// Register access for C's EtherCAT recovery (src/ecat/recovery.h): read
/// (or, with `write`, write) `len` bytes at `buf` of ESC register `reg` of
/// device `dev` (0-based) at its station address, or at its ring position if
/// `by_position`. `*wkc` = 1 if it answered, 0 if nobody did (CODE_OK either
/// way); another failure is CODE_IO with `msg`. The state checker's thread.
///
/// # Safety
/// `link` from autd3crab_open; `buf` `len` bytes; `wkc` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_register(
    link: *const Link,
    dev: u16,
    by_position: bool,
    write: bool,
    reg: u16,
    buf: *mut u8,
    len: u16,
    wkc: *mut u16,
    msg: *mut c_char,
    cap: usize,
) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: see the function's contract.
        let link = unsafe { &*link };
        let buf = unsafe { std::slice::from_raw_parts_mut(buf, usize::from(len)) };
        if usize::from(dev) >= link.addresses.len() {
            write_msg(msg, cap, &format!("ethercrab: no device {dev}"));
            return CODE_INTERNAL;
        }
        match futures_lite::future::block_on(link.register(usize::from(dev), by_position, write, reg, buf)) {
            Ok(answered) => {
                unsafe { *wkc = u16::from(answered) };
                CODE_OK
            }
            Err(e) => {
                write_msg(msg, cap, &format!("ethercrab: register 0x{reg:04x} of device {dev}: {e}"));
                CODE_IO
            }
        }
    }));
    r.unwrap_or_else(|p| {
        write_msg(msg, cap, &panic_msg(&*p));
        CODE_INTERNAL
    })
}

/// Device `dev`'s configured station address (0 if there is no such device).
///
/// # Safety
/// `link` from autd3crab_open.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_station(link: *const Link, dev: u16) -> u16 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: see the function's contract.
        let link = unsafe { &*link };
        link.addresses.get(usize::from(dev)).copied().unwrap_or(0)
    }))
    .unwrap_or(0)
}

/// Received frames the tx/rx driver ignored because EtherCrab rejected them
/// (late replies to timed-out PDUs, unknown indices, malformed frames).
/// Any thread, any time between open and close; 0 on a panic.
///
/// # Safety
/// `link` from autd3crab_open.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_ignored_replies(link: *const Link) -> u64 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: see the function's contract.
        let link = unsafe { &*link };
        link.transport.ignored.load(Ordering::Relaxed)
    }))
    .unwrap_or(0)
}

/// SYNC0 off, devices to INIT, stop the tx/rx thread, free everything.
/// No cycle or check may be running. NULL is fine.
///
/// # Safety
/// `link` from autd3crab_open, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_close(link: *mut Link) {
    if link.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: from Box::into_raw in autd3crab_open.
        let link = unsafe { Box::from_raw(link) };
        futures_lite::future::block_on(shutdown(link.transport.md(), &link.addresses));
        let Link {
            groups, transport, ..
        } = *link;
        drop(groups);
        drop(transport);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysdiff_is_sign_magnitude() {
        assert_eq!(sysdiff_ns(100), 100.0);
        assert_eq!(sysdiff_ns(0x8000_0064), -100.0);
    }

    #[test]
    fn loopback_is_never_a_candidate() {
        assert!(!candidate_interfaces().iter().any(|n| n == "lo"));
    }

    #[test]
    fn null_arguments_are_an_error_not_a_crash() {
        let mut buf = [0 as c_char; 128];
        let rc = unsafe {
            autd3crab_open(
                std::ptr::null(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        assert_eq!(rc, CODE_INTERNAL);
        assert!(
            unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_bytes()
                .starts_with(b"ethercrab shim")
        );
    }

    #[test]
    fn abi_version_mismatch_is_reported() {
        let args = OpenArgs {
            abi_version: ABI_VERSION + 1,
            interface: std::ptr::null(),
            num_devices: 1,
            sync0_period_ns: 1_000_000,
            sync0_shift_ns: 0,
            sync_tolerance_ns: 1000,
            sync_timeout_ms: 10,
            state_timeout_ms: 10,
            op_wait_timeout_ms: 10,
            pdu_timeout_ms: 10,
            rt_priority: 0,
            rt_cpu: -1,
            on_adapter: None,
            on_adapter_user: std::ptr::null_mut(),
            check_identity: None,
            apply_rt: None,
        };
        let mut link: *mut Link = std::ptr::null_mut();
        let mut info = OpenInfo {
            num_devices: 0,
            expected_wkc: 0,
            interface: [0; 64],
        };
        let mut buf = [0 as c_char; 128];
        let rc =
            unsafe { autd3crab_open(&args, &mut link, &mut info, buf.as_mut_ptr(), buf.len()) };
        assert_eq!(rc, CODE_VERSION);
        assert!(link.is_null());
    }

    #[test]
    fn group_validity_is_per_device() {
        use SubDeviceState::{None as Gone, Op, SafeOp};
        let mut v = [false; 2];
        group_devices_valid(6, &[Op, Op], 3, &mut v);
        assert_eq!(v, [true, true]);
        // the second device left: its state read got no answer, the LRW counted 3
        group_devices_valid(3, &[Op, Gone], 3, &mut v);
        assert_eq!(v, [true, false]);
        group_devices_valid(3, &[Gone, Op], 3, &mut v);
        assert_eq!(v, [false, true]);
        // a device not in OP that still counted: the sum is ambiguous, nobody is taken
        group_devices_valid(6, &[Op, SafeOp], 3, &mut v);
        assert_eq!(v, [false, false]);
        // the bring-up's exchanges (no per-device count): nobody
        group_devices_valid(6, &[Op, Op], 0, &mut v);
        assert_eq!(v, [false, false]);
    }

    #[test]
    fn message_is_truncated_on_a_char_boundary() {
        let mut buf = [1 as c_char; 4];
        write_msg(buf.as_mut_ptr(), buf.len(), "abé");
        assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(), b"ab");
    }
}
