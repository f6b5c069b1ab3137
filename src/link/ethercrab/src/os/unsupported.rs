//! Targets without a raw-socket transport in this shim (everything but
//! Linux so far): opening the link reports `CODE_NOT_BUILT` with the reason.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::{Context, Poll};

use ethercrab::{PduRx, PduTx};

use crate::{CODE_NOT_BUILT, Fail, fail};

fn reason() -> String {
    format!(
        "ethercrab: this build of the shim has no raw-socket transport for {} (only Linux AF_PACKET so far)",
        std::env::consts::OS
    )
}

/// Never built: `new` always fails.
pub(crate) struct TxRx<'a>(PhantomData<&'a ()>);

impl TxRx<'_> {
    pub(crate) fn new<'a>(
        _ifname: &str,
        _tx: PduTx<'a>,
        _rx: PduRx<'a>,
        _ignored: Arc<AtomicU64>,
    ) -> std::io::Result<TxRx<'a>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            reason(),
        ))
    }
}

impl Future for TxRx<'_> {
    type Output = Result<(), String>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Err(reason()))
    }
}

/// Interface "auto" has nothing to try: NOT_BUILT.
pub(crate) fn candidate_interfaces() -> Result<Vec<String>, Fail> {
    Err(fail(CODE_NOT_BUILT, reason()))
}

pub(crate) fn io_fail(ifname: &str, e: &std::io::Error) -> Fail {
    fail(
        CODE_NOT_BUILT,
        format!("{} (interface \"{ifname}\": {e})", reason()),
    )
}
