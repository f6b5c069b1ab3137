//! The C ABI `link_ethercrab.c` calls (mirrored there as `crab_*`; bump
//! `ABI_VERSION` on both sides on any change). Every entry point runs under
//! `catch_unwind`: no panic crosses the boundary.

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;

use crate::bring_up;
use crate::cycle::Link;
use crate::{
    ABI_VERSION, CODE_INTERNAL, CODE_INVALID_OPTION, CODE_IO, CODE_LINK, CODE_LOST, CODE_OK,
    CODE_VERSION, Fail, MAX_SUBDEVICES, RX_BYTES, TX_BYTES, fail, is_lost,
};

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

pub(crate) fn panic_msg(p: &(dyn std::any::Any + Send)) -> String {
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

/// Open: scan, check, bring every device to SAFE-OP with SYNC0 running
/// (C then warms up and waits for OP: autd3crab_cycle, autd3crab_request_op,
/// autd3crab_set_expected_wkc). Blocking. On success `*out`
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
        let args_copy = OpenArgs {
            interface: std::ptr::null(),
            ..*args
        };
        let link = bring_up::open(args_copy, iface)?;
        info.num_devices = link.addresses.len() as u16;
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

/// One exchange (no pacing: the C side sleeps until the DC-aligned deadline),
/// in SAFE-OP (C's warm-up) or OP.
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
        out.expected_wkc = link.expected_wkc;
        match link.cycle(tx, rx) {
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

/// Request OP from every device (no wait: C's OP wait follows with cycles).
/// CODE_OK, or an error code with `msg`. Open time only (no cycle running).
///
/// # Safety
/// `link` from autd3crab_open; `msg` a buffer of `cap` bytes (or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_request_op(
    link: *mut Link,
    msg: *mut c_char,
    cap: usize,
) -> i32 {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: see the function's contract.
        let link = unsafe { &mut *link };
        match link.request_op() {
            Ok(()) => CODE_OK,
            Err(f) => {
                write_msg(msg, cap, &f.msg);
                f.code
            }
        }
    }));
    r.unwrap_or_else(|p| {
        write_msg(msg, cap, &panic_msg(&*p));
        CODE_INTERNAL
    })
}

/// The working counter of a good cycle, as C's OP wait found it: from now on
/// a cycle's rx_valid and dev_valid are judged against it. Open time only.
///
/// # Safety
/// `link` from autd3crab_open.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn autd3crab_set_expected_wkc(link: *mut Link, wkc: u16) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: see the function's contract.
        unsafe { (*link).expected_wkc = wkc };
    }));
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
        match futures_lite::future::block_on(link.register(
            usize::from(dev),
            by_position,
            write,
            reg,
            buf,
        )) {
            Ok(answered) => {
                unsafe { *wkc = u16::from(answered) };
                CODE_OK
            }
            Err(e) => {
                write_msg(
                    msg,
                    cap,
                    &format!("ethercrab: register 0x{reg:04x} of device {dev}: {e}"),
                );
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
        unsafe { Box::from_raw(link) }.close();
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

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
            interface: [0; 64],
        };
        let mut buf = [0 as c_char; 128];
        let rc =
            unsafe { autd3crab_open(&args, &mut link, &mut info, buf.as_mut_ptr(), buf.len()) };
        assert_eq!(rc, CODE_VERSION);
        assert!(link.is_null());
    }

    #[test]
    fn message_is_truncated_on_a_char_boundary() {
        let mut buf = [1 as c_char; 4];
        write_msg(buf.as_mut_ptr(), buf.len(), "abé");
        assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(), b"ab");
    }
}
