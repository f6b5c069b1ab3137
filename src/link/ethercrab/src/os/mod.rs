//! The raw-socket transport per target OS, cut as EtherCrab's own `std`
//! module is (crate ethercrab 0.7.1 `src/std/{unix,windows}.rs`): on Linux an
//! AF_PACKET socket driven by the shim's tx/rx driver; other targets have no
//! transport in this shim yet, and opening the link there reports
//! `CODE_NOT_BUILT` (the rest of the crate is OS-neutral).
//!
//! Each OS module offers the same three items:
//! - `TxRx::new(ifname, tx, rx, ignored)`: the tx/rx driver (a `Future` that
//!   ends with `Ok` when EtherCrab asks it to exit, `Err` when the socket fails);
//! - `candidate_interfaces()`: the adapters interface "auto" tries;
//! - `io_fail(ifname, error)`: the status code and message for a socket that
//!   could not be opened.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{TxRx, candidate_interfaces, io_fail};

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub(crate) use unsupported::{TxRx, candidate_interfaces, io_fail};
