//! The bring-up up to SAFE-OP (autd3-sdk `link/open.rs`): the adapter (named,
//! or the first of interface "auto" whose devices are all AUTD3), discovery,
//! the device count, SYNC0 mode, PRE-OP with PDI, DC alignment, SYNC0, SAFE-OP.
//! The warm-up and the OP wait that follow are C's (libautd3's shared
//! bring-up, over `autd3crab_cycle` / `autd3crab_request_op`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use ethercrab::error::Error as CrabError;
use ethercrab::subdevice_group::{DcConfiguration, NoDc, PreOp};
use ethercrab::{Command, DcSync, MainDevice, RegisterAddress, Timeouts};

use crate::cycle::Link;
use crate::dc::wait_for_align;
use crate::discovery::discover;
use crate::ffi::{OpenArgs, panic_msg};
use crate::os::candidate_interfaces;
use crate::transport::Transport;
use crate::{
    CODE_COUNT_MISMATCH, CODE_INTERNAL, CODE_IO, CODE_LINK, CODE_NO_DEVICE, CODE_STATE_TIMEOUT,
    Fail, Group, SafeOpGroup, crab_fail, fail, ms,
};

const DC_START_DELAY: Duration = Duration::from_millis(100);
/// Bring-up holds EtherCrab's fixed-capacity discovery tables on the stack.
const BRINGUP_STACK: usize = 32 << 20;
/// Bring-up attempts on a named adapter when a frame times out (see `open`).
const BRINGUP_ATTEMPTS: u32 = 3;

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

/// The adapter and its devices: `iface`, or interface "auto" (autd3-sdk `utils.rs`).
async fn open_adapter(
    args: &OpenArgs,
    iface: Option<&str>,
    timeouts: Timeouts,
) -> Result<(Transport, Vec<Group<PreOp, NoDc>>), Fail> {
    if let Some(name) = iface {
        let t = Transport::open(name, timeouts, args.rt_priority, args.rt_cpu, args)?;
        let g = discover(&t).await?;
        return Ok((t, g));
    }
    let mut tried = Vec::new();
    for name in candidate_interfaces()? {
        let t = match Transport::open(&name, timeouts, args.rt_priority, args.rt_cpu, args) {
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
            Ok(g) => return Ok((t, g)),
            Err(f) => tried.push(format!(
                "{name}: {}",
                f.msg.trim_start_matches("ethercrab: ")
            )),
        }
    }
    Err(fail(
        CODE_NO_DEVICE,
        format!(
            "ethercrab: no adapter with AUTD3 devices found (interface \"auto\"; tried: {})",
            if tried.is_empty() {
                "no adapter is up".to_owned()
            } else {
                tried.join(", ")
            }
        ),
    ))
}

/// PRE-OP with PDI, DC alignment, SYNC0 on the grid, SAFE-OP.
async fn to_safe_op(
    md: &MainDevice<'_>,
    groups: Vec<Group<PreOp, NoDc>>,
    addresses: &[u16],
    args: &OpenArgs,
) -> Result<Vec<SafeOpGroup>, Fail> {
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
        addresses,
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
    let mut safe = Vec::with_capacity(pdi.len());
    for g in pdi {
        let g = g
            .configure_dc_sync(md, dc)
            .await
            .map_err(|e| crab_fail("configuring SYNC0", e))?;
        match g.into_safe_op(md).await {
            Ok(g) => safe.push(g),
            Err(e) => {
                let states = describe_states(md, addresses).await;
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
    Ok(safe)
}

/// Every device of `iface` (or "auto") in SAFE-OP with SYNC0 running.
async fn bring_up(args: &OpenArgs, iface: Option<&str>) -> Result<Link, Fail> {
    let timeouts = Timeouts {
        state_transition: ms(args.state_timeout_ms),
        pdu: ms(args.pdu_timeout_ms),
        // EtherCrab's default EEPROM wait is 10 ms; one scheduling stall of a
        // loaded host (or emulator) longer than that failed open in tests.
        eeprom: ms(args.pdu_timeout_ms).max(Timeouts::default().eeprom),
        ..Timeouts::default()
    };
    let (transport, mut groups) = open_adapter(args, iface, timeouts).await?;
    let md = transport.md();
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
    let safe = to_safe_op(md, groups, &addresses, args).await?;
    Ok(Link::new(safe, addresses, transport))
}

/// The bring-up on its own thread: EtherCrab's discovery tables are large
/// fixed-capacity values, too big for an arbitrary caller's stack.
/// `on_adapter`/`on_adapter_user` go along: C keeps them valid until the open
/// call returns, and the bring-up thread is joined before that.
pub(crate) fn open(args: OpenArgs, iface: Option<String>) -> Result<Link, Fail> {
    std::thread::Builder::new()
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
                    match futures_lite::future::block_on(bring_up(&args, iface.as_deref())) {
                        Err(f)
                            if f.pdu_timeout && iface.is_some() && attempt < BRINGUP_ATTEMPTS =>
                        {
                            attempt += 1
                        }
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
        .unwrap_or_else(|p| Err(fail(CODE_INTERNAL, panic_msg(&*p))))
}
