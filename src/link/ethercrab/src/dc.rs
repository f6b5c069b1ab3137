//! Distributed clocks before SYNC0 starts: keep distributing the reference
//! time and wait until every device's system-time difference (0x092C) is
//! within the tolerance (autd3-sdk `sync.rs`).

use std::time::{Duration, Instant};

use ethercrab::error::Error as CrabError;
use ethercrab::subdevice_group::{HasPdi, NoDc};
use ethercrab::{Command, MainDevice, RegisterAddress};

use crate::{CODE_SYNC_TIMEOUT, Fail, Group, crab_fail, fail};

const ALIGN_CHECK_INTERVAL: Duration = Duration::from_millis(10);
const ALIGN_LOOP_SLEEP: Duration = Duration::from_millis(1);
const ALIGN_EMA_ALPHA: f64 = 0.2;

// DC system time difference (0x092C) is sign-magnitude, not two's complement
// (ETG.1000.4; autd3-sdk sync.rs).
fn sysdiff_ns(raw: u32) -> f64 {
    let mag = f64::from(raw & 0x7FFF_FFFF);
    if raw & 0x8000_0000 != 0 { -mag } else { mag }
}

pub(crate) async fn wait_for_align<S: HasPdi>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysdiff_is_sign_magnitude() {
        assert_eq!(sysdiff_ns(100), 100.0);
        assert_eq!(sysdiff_ns(0x8000_0064), -100.0);
    }
}
