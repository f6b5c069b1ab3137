//! The transport of one adapter: EtherCrab's PDU storage, the MainDevice on
//! it and the tx/rx thread running the OS's raw-socket driver (`os::TxRx`);
//! and the two hooks C gives the open (`OpenArgs::on_adapter`, `apply_rt`).

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use ethercrab::{MainDevice, MainDeviceConfig, RetryBehaviour, Timeouts};

use crate::ffi::{IdentityFn, OpenArgs, RtFn, panic_msg};
use crate::os::{TxRx, io_fail};
use crate::{
    CODE_INTERNAL, CODE_IO, CODE_NO_INTERFACE, CODE_OK, CODE_PERMISSION, Fail, Storage, fail,
};

const TXRX_EXIT_TIMEOUT: Duration = Duration::from_secs(1);

pub(crate) struct Transport {
    storage: *mut Storage,
    md: Option<MainDevice<'static>>,
    txrx: Option<(JoinHandle<()>, mpsc::Receiver<()>)>,
    /// Set by the tx/rx thread when EtherCrab's task ended on its own (e.g.
    /// the interface went away): every later PDU would only time out.
    pub(crate) txrx_ended: Arc<Mutex<Option<String>>>,
    /// Received frames EtherCrab rejected (`TxRx::ignored`).
    pub(crate) ignored: Arc<AtomicU64>,
    pub(crate) ifname: String,
    pub(crate) check_identity: Option<IdentityFn>,
}

// SAFETY: `storage` is uniquely owned by the Transport and only freed in Drop;
// PduStorage is designed to be shared between the tx/rx thread and callers.
unsafe impl Send for Transport {}

fn apply_rt(f: Option<RtFn>, priority: i32, cpu: i32) -> Result<(), String> {
    if priority <= 0 && cpu < 0 {
        return Ok(());
    }
    let Some(f) = f else {
        return Err(
            "rt_priority/rt_cpu asked for, but the caller gave no RT policy (apply_rt)".to_owned(),
        );
    };
    let mut buf = [0u8; 256];
    // SAFETY: C's hook writes at most `cap` bytes, NUL-terminated, into buf.
    let rc = unsafe { f(priority, cpu, buf.as_mut_ptr().cast(), buf.len()) };
    if rc == CODE_OK {
        return Ok(());
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Err(format!(
        "tx/rx thread: {}",
        String::from_utf8_lossy(&buf[..end])
    ))
}

impl Transport {
    pub(crate) fn open(
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

    pub(crate) fn md(&self) -> &MainDevice<'static> {
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
