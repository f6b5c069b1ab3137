//! usage: armt7-rust-server HOST:PORT
//!
//! Runs the published `RemoteServer` (autd3-rs-link-remote 0.9.0) on HOST:PORT over an
//! echo link (rx of device d = tx[d][0], tx[d][1], like the crate's own loopback test),
//! serving clients one after another until killed. Prints "listening on ADDR" once bound.
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;

use autd3_rs_core::link::{ConstStateChecker, CycleOutcome, Link};
use autd3_rs_core::{RX_FRAME_BYTES, TX_FRAME_BYTES};
use autd3_rs_link_remote::{DeviceLayout, RemoteLinkError, RemoteServer, RemoteServerOption};

struct EchoLink {
    num_devices: usize,
}

impl Link for EchoLink {
    type Error = Infallible;
    type Checker = ConstStateChecker;

    fn num_devices(&self) -> usize {
        self.num_devices
    }

    fn state_checker(&self) -> ConstStateChecker {
        ConstStateChecker::new(self.num_devices)
    }

    fn cycle(
        &mut self,
        tx: &[[u8; TX_FRAME_BYTES]],
        rx: &mut [[u8; RX_FRAME_BYTES]],
    ) -> Result<CycleOutcome, Infallible> {
        for (t, r) in tx.iter().zip(rx.iter_mut()) {
            r[0] = t[0];
            r[1] = t[1];
        }
        Ok(CycleOutcome::valid())
    }
}

fn main() {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .expect("usage: armt7-rust-server HOST:PORT")
        .parse()
        .expect("HOST:PORT");
    let mut server = RemoteServer::new(RemoteServerOption::new(addr), |layout: &[DeviceLayout]| {
        Ok::<_, RemoteLinkError>(EchoLink {
            num_devices: layout.len(),
        })
    })
    .expect("bind");
    println!("listening on {}", server.local_addr().expect("local_addr"));
    let _ = std::io::stdout().flush();
    if let Err(e) = server.serve() {
        eprintln!("serve: {e}");
        std::process::exit(1);
    }
}
