//! Discovery: scan the bus, check every SubDevice is an AUTD3 (C's shared
//! identity check, or the name alone without it) and put them into groups of
//! `GROUP_SUBDEVICES` in ring order.

use std::ffi::{CStr, c_char};

use ethercrab::SubDeviceGroupHandle;
use ethercrab::error::Error as CrabError;
use ethercrab::std::ethercat_now;
use ethercrab::subdevice_group::{NoDc, PreOp};

use crate::transport::Transport;
use crate::{
    CODE_COUNT_MISMATCH, CODE_NO_DEVICE, CODE_NOT_AUTD, CODE_OK, Fail, GROUP_SUBDEVICES, Group,
    MAX_GROUPS, MAX_SUBDEVICES, crab_fail, fail,
};

const SUBDEVICE_NAME: &str = "AUTD";
const DISCOVER_ATTEMPTS: u32 = 3;

/// Scan the bus, retrying when nothing answered: a frame can be lost while a
/// link is still coming up, and EtherCrab does not retry PDUs by itself.
pub(crate) async fn discover(t: &Transport) -> Result<Vec<Group<PreOp, NoDc>>, Fail> {
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
