//! The process data of every group, exchanged concurrently (one frame per
//! group per cycle, autd3-sdk `link/group.rs`), in SAFE-OP (the warm-up C runs
//! after open) or OP (after `request_op`); the register access C's state
//! checker and OP wait use; the shutdown at close.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use ethercrab::error::Error as CrabError;
use ethercrab::subdevice_group::{CycleInfo, HasDc, HasPdi};
use ethercrab::{Command, MainDevice, RegisterAddress, SubDeviceState, TxRxResponse};

use crate::transport::Transport;
use crate::{
    Fail, GROUP_SUBDEVICES, Group, MAX_GROUPS, MAX_SUBDEVICES, OpGroup, RX_BYTES, SafeOpGroup,
    TX_BYTES, crab_fail, is_lost,
};

const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// An open link: its groups, its devices' station addresses (discovery
/// order), the working counter of a good cycle (0 until C's OP wait set it)
/// and its transport.
pub struct Link {
    groups: Groups,
    pub(crate) addresses: Vec<u16>,
    pub(crate) expected_wkc: u16,
    pub(crate) transport: Transport,
}

/// The groups' EtherCrab type state: SAFE-OP from open, OP once requested.
enum Groups {
    SafeOp(Vec<SafeOpGroup>),
    Op(Vec<OpGroup>),
}

pub(crate) struct Agg {
    pub(crate) working_counter: u16,
    pub(crate) all_op: bool,
    /// Some group's frame was lost (its devices' inputs are not in rx).
    pub(crate) any_lost: bool,
    pub(crate) next_cycle_wait: Duration,
    pub(crate) dc_system_time: u64,
    /// Per device: its inputs came back (group_devices_valid).
    pub(crate) dev_valid: [bool; MAX_SUBDEVICES],
}

/// Which devices of one group answered its exchange: the group's frame
/// carries its LRW and an AL status read (FPRD) per device, in one pass, so a
/// device that read OP there processed the LRW too and counted `per_device`
/// in its working counter. A device in SAFE-OP may count as well (its
/// SyncManagers are active from SAFE-OP on, ETG.1000.6; it takes no outputs,
/// so it is not valid itself), one in INIT or PRE-OP or that did not answer
/// does not. So the counter must lie between `per_device` per device in OP
/// and that plus `per_device` per device in SAFE-OP: then every device in OP
/// is valid; any other count cannot be explained and none is taken. (An
/// equality with the OP devices alone made a healthy group-mate stale while
/// the other device came back through SAFE-OP.) No allocation: the verdicts
/// go to `out` (the group's devices, in order).
fn group_devices_valid(
    working_counter: u16,
    states: &[SubDeviceState],
    per_device: u16,
    out: &mut [bool],
) {
    let op = states.iter().filter(|s| **s == SubDeviceState::Op).count() as u16;
    let safe_op = states
        .iter()
        .filter(|s| **s == SubDeviceState::SafeOp)
        .count() as u16;
    let low = op.saturating_mul(per_device);
    let high = low.saturating_add(safe_op.saturating_mul(per_device));
    let sum_ok = per_device > 0 && working_counter >= low && working_counter <= high;
    for (o, s) in out.iter_mut().zip(
        states
            .iter()
            .chain(std::iter::repeat(&SubDeviceState::None)),
    ) {
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

/// One cycle of `groups`: `tx` into their outputs, the exchange, their inputs
/// into `rx` (devices in discovery order; no allocation).
fn cycle_groups<S: HasPdi>(
    groups: &[Group<S, HasDc>],
    md: &MainDevice<'_>,
    tx: &[u8],
    rx: &mut [u8],
    per_device: u16,
) -> Result<Agg, CrabError> {
    let mut k = 0usize;
    for g in groups {
        for sd in g.iter(md) {
            let mut o = sd.outputs_raw_mut();
            let len = o.len().min(TX_BYTES);
            o[..len].copy_from_slice(&tx[k * TX_BYTES..k * TX_BYTES + len]);
            k += 1;
        }
    }
    let r = futures_lite::future::block_on(exchange(groups, md, per_device))?;
    let mut k = 0usize;
    for g in groups {
        for sd in g.iter(md) {
            let i = sd.inputs_raw();
            let dst = &mut rx[k * RX_BYTES..(k + 1) * RX_BYTES];
            let len = i.len().min(RX_BYTES);
            dst[..len].copy_from_slice(&i[..len]);
            dst[len..].fill(0);
            k += 1;
        }
    }
    Ok(r)
}

impl Link {
    pub(crate) fn new(groups: Vec<SafeOpGroup>, addresses: Vec<u16>, transport: Transport) -> Self {
        Link {
            groups: Groups::SafeOp(groups),
            addresses,
            expected_wkc: 0,
            transport,
        }
    }

    /// One exchange of every group (`tx`: n * TX_BYTES, `rx`: n * RX_BYTES).
    pub(crate) fn cycle(&self, tx: &[u8], rx: &mut [u8]) -> Result<Agg, CrabError> {
        let md = self.transport.md();
        let n = self.addresses.len();
        let per_device = if n > 0 {
            self.expected_wkc / n as u16
        } else {
            0
        };
        match &self.groups {
            Groups::SafeOp(g) => cycle_groups(g, md, tx, rx, per_device),
            Groups::Op(g) => cycle_groups(g, md, tx, rx, per_device),
        }
    }

    /// Request OP from every device (EtherCrab's `request_into_op`: AL
    /// control per device, no wait); the groups are OP-typed from now on. A
    /// second call does nothing.
    pub(crate) fn request_op(&mut self) -> Result<(), Fail> {
        let Groups::SafeOp(safe) = std::mem::replace(&mut self.groups, Groups::Op(Vec::new()))
        else {
            return Ok(());
        };
        let md = self.transport.md();
        let mut op = Vec::with_capacity(safe.len());
        let mut result = Ok(());
        for g in safe {
            match futures_lite::future::block_on(g.request_into_op(md)) {
                Ok(g) => op.push(g),
                Err(e) => {
                    result = Err(crab_fail("requesting OP", e));
                    break;
                }
            }
        }
        self.groups = Groups::Op(op);
        result
    }

    /// SYNC0 off and every device to INIT (bounded), then the groups, then
    /// the transport they were built on.
    pub(crate) fn close(self) {
        futures_lite::future::block_on(shutdown(self.transport.md(), &self.addresses));
        let Link {
            groups, transport, ..
        } = self;
        drop(groups);
        drop(transport);
    }

    /// Read (or write) `buf.len()` bytes of ESC register `reg` of device `dev`
    /// at its station address, or at its ring position (a power-cycled ESC has
    /// lost its address). Ok(false): nobody answered (working counter 0 or no
    /// reply in time).
    pub(crate) async fn register(
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
            cmd.receive_slice(md, len)
                .await
                .map(|d| buf.copy_from_slice(&d))
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if is_lost(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_validity_is_per_device() {
        use SubDeviceState::{None as Gone, Op, Other, SafeOp};
        let mut v = [false; 2];
        group_devices_valid(6, &[Op, Op], 3, &mut v);
        assert_eq!(v, [true, true]);
        // the second device left: its state read got no answer, the LRW counted 3
        group_devices_valid(3, &[Op, Gone], 3, &mut v);
        assert_eq!(v, [true, false]);
        group_devices_valid(3, &[Gone, Op], 3, &mut v);
        assert_eq!(v, [false, true]);
        // a device in SAFE-OP (back from a fault, not yet in OP) counted or not: the OP one is valid, it is not
        group_devices_valid(6, &[Op, SafeOp], 3, &mut v);
        assert_eq!(v, [true, false]);
        group_devices_valid(3, &[Op, SafeOp], 3, &mut v);
        assert_eq!(v, [true, false]);
        // a count the states cannot explain: nobody is taken
        group_devices_valid(2, &[Op, SafeOp], 3, &mut v);
        assert_eq!(v, [false, false]);
        group_devices_valid(6, &[Op, Gone], 3, &mut v);
        assert_eq!(v, [false, false]);
        group_devices_valid(3, &[Op, Other(0x14)], 3, &mut v);
        assert_eq!(v, [true, false]);
        // the bring-up's exchanges (no per-device count): nobody
        group_devices_valid(6, &[Op, Op], 0, &mut v);
        assert_eq!(v, [false, false]);
    }
}
