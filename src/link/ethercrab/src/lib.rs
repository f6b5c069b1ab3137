//! The Rust half of libautd3's EtherCrab link: the `ethercrab` crate (a pure
//! Rust EtherCAT MainDevice) behind a small C ABI. `link_ethercrab.c` is the
//! only caller; it implements the link vtable, validates options, paces the
//! cycle, runs the OP wait every EtherCAT link shares (libautd3's services
//! `ecat_bringup`, over this shim's cycle, OP request and register access) and
//! turns the status codes below into `autd3_err_t` + message.
//!
//! The bring-up up to SAFE-OP follows the new-generation EtherCrab link of
//! shinolab/autd3-sdk (`crates/autd3-rs-link-ethercrab/src/link/{open,group}.rs`,
//! `sync.rs`; crate autd3-rs-link-ethercrab 0.7.0): discover, check every
//! device is an AUTD3, SYNC0 mode, PRE-OP with PDI, DC alignment (EMA of
//! 0x092C), configure SYNC0, SAFE-OP. C then warms up, requests OP
//! (`autd3crab_request_op`) and waits for a stable working counter.
//!
//! Modules, as EtherCrab itself is cut (its `std` transport per OS, its
//! MainDevice / SubDeviceGroup / DC concerns):
//! - `ffi`: the C ABI (types and `extern "C"` entry points);
//! - `os`: the raw-socket transport per target OS (Linux: AF_PACKET; other
//!   targets: none yet, open reports `CODE_NOT_BUILT`);
//! - `transport`: PDU storage, MainDevice and the tx/rx thread;
//! - `discovery`: the scan, the AUTD3 identity check, the device groups;
//! - `dc`: the DC alignment wait;
//! - `bring_up`: adapter choice and the walk to SAFE-OP;
//! - `cycle`: the concurrent exchange of every group, OP request, register
//!   access for C's state checker, shutdown.
//!
//! Runtime: EtherCrab's std build uses async-io for its socket and timers, so
//! the shim needs no tokio. It owns one thread, the tx/rx thread, running the
//! shim's own tx/rx driver (`os::TxRx`) under `async_io::block_on`; callers
//! block on EtherCrab futures with `futures_lite::future::block_on`. Close
//! stops and joins the tx/rx thread and frees the PDU storage. (async-io keeps
//! one process-wide helper thread of its own once used; it idles.)
//!
//! The state checker and the recovery of power-cycled devices are C's (the
//! EtherCAT recovery shared by every EtherCAT link, src/ecat/recovery.h): the
//! shim gives it register access (`autd3crab_register`).
//! The optional pcap capture is C's (the shared tap of src/nic/capture.h):
//! the shim only calls `OpenArgs::on_adapter` before it opens an adapter.
//!
//! No panic crosses the boundary: every `extern "C"` function runs its body
//! under `catch_unwind` and reports a panic as `CODE_INTERNAL`.

use std::time::Duration;

use ethercrab::PduStorage;
use ethercrab::SubDeviceGroup;
use ethercrab::error::{Error as CrabError, TimeoutError};
use ethercrab::subdevice_group::HasDc;

mod bring_up;
mod cycle;
mod dc;
mod discovery;
pub mod ffi;
mod os;
mod transport;

pub use cycle::Link;

/// Version of the C ABI (`ffi`); `link_ethercrab.c` checks it before any other call.
pub const ABI_VERSION: u32 = 9;

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
// 14 is C's CODE_SECOND_MASTER (from its on_adapter hook; passed through).
/// This build has no raw-socket transport for the target OS (`os`).
#[cfg_attr(target_os = "linux", allow(dead_code))]
const CODE_NOT_BUILT: i32 = 15;

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

type Storage = PduStorage<MAX_FRAMES, PDU_DATA>;
type Group<S, DC> = SubDeviceGroup<GROUP_SUBDEVICES, GROUP_PDI, ethercrab::DefaultLock, S, DC>;
type SafeOpGroup = Group<ethercrab::subdevice_group::SafeOp, HasDc>;
type OpGroup = Group<ethercrab::subdevice_group::Op, HasDc>;

/// A failed step: a status code and its message.
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

/// A frame that did not come back in time, or a short working counter.
fn is_lost(e: &CrabError) -> bool {
    matches!(e, CrabError::Timeout(_) | CrabError::WorkingCounter { .. })
}

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
}
