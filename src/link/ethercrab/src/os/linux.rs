//! Linux: an AF_PACKET raw socket bound to one adapter, and the shim's tx/rx
//! driver on it (`TxRx`), in place of EtherCrab 0.7.1's own std `tx_rx_task`.

use std::ffi::CStr;
use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use ethercrab::error::Error as CrabError;
use ethercrab::{PduRx, PduTx};

use crate::{CODE_IO, CODE_NO_INTERFACE, CODE_PERMISSION, Fail, fail};

/// EtherCAT's EtherType (ETG.1000.4 §5.1): the raw socket only sees these.
const ETHERCAT_ETHERTYPE: u16 = 0x88A4;
/// One receive buffer, reused for every frame: a full Ethernet frame (1514
/// bytes) fits; anything longer is truncated, then rejected and counted.
const RX_BUF: usize = 2048;
/// Frames handled per poll before the driver yields (bounded loops).
const RX_BURST: usize = 64;

/// An AF_PACKET raw socket bound to `ifname` for EtherCAT frames only,
/// non-blocking (the same kind of socket EtherCrab's own std task uses, so it
/// works in a user namespace with CAP_NET_RAW there).
fn open_socket(ifname: &str) -> std::io::Result<OwnedFd> {
    let proto = ETHERCAT_ETHERTYPE.to_be();
    // SAFETY: plain socket(2); the fd is owned right below.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            i32::from(proto),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let cname = std::ffi::CString::new(ifname)
        .map_err(|_| std::io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: all-zero is a valid sockaddr_ll.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = index as i32;
    // SAFETY: bind(2) with a properly sized sockaddr_ll.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// The shim's tx/rx driver, in place of EtherCrab 0.7.1's `tx_rx_task`: that
/// task *ends* with `ReceiveFrame` as soon as `PduRx::receive_frame` rejects a
/// frame, e.g. a reply that arrives after its PDU timed out and its frame
/// slot was freed (`Decode` / `InvalidIndex`), so one late reply on a loaded
/// machine killed the link for good. Here a rejected frame is counted and
/// ignored (as SOEM and echocat drop replies nobody waits for); only socket
/// errors (e.g. the interface was removed) end the task.
pub(crate) struct TxRx<'a> {
    sock: async_io::Async<OwnedFd>,
    tx: PduTx<'a>,
    rx: PduRx<'a>,
    buf: Box<[u8]>,
    ignored: Arc<AtomicU64>,
}

impl TxRx<'_> {
    pub(crate) fn new<'a>(
        ifname: &str,
        tx: PduTx<'a>,
        rx: PduRx<'a>,
        ignored: Arc<AtomicU64>,
    ) -> std::io::Result<TxRx<'a>> {
        Ok(TxRx {
            sock: async_io::Async::new(open_socket(ifname)?)?,
            tx,
            rx,
            buf: vec![0u8; RX_BUF].into_boxed_slice(),
            ignored,
        })
    }

    /// Send every frame EtherCrab has queued. Err = the socket failed.
    fn send_all(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let fd = self.sock.as_raw_fd();
        while let Some(frame) = self.tx.next_sendable_frame() {
            let mut err = None;
            let res = frame.send_blocking(|data| {
                // SAFETY: send(2) of a valid slice on our socket.
                let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), 0) };
                if n >= 0 {
                    return Ok(n as usize);
                }
                err = Some(std::io::Error::last_os_error());
                Err(CrabError::SendFrame)
            });
            match (res, err) {
                (Ok(_), _) => {}
                (Err(_), Some(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    // The frame stays queued (send_blocking released its
                    // claim); retry once the socket can take it.
                    if self.sock.poll_writable(cx).is_ready() {
                        cx.waker().wake_by_ref();
                    }
                    return Ok(());
                }
                (Err(_), Some(e)) => return Err(format!("failed to send an EtherCAT frame: {e}")),
                (Err(e), None) => return Err(format!("failed to send an EtherCAT frame: {e}")),
            }
        }
        Ok(())
    }

    /// Hand every received frame to EtherCrab. Err = the socket failed.
    fn receive_all(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let fd = self.sock.as_raw_fd();
        for _ in 0..RX_BURST {
            // SAFETY: recv(2) into our own buffer.
            let n = unsafe { libc::recv(fd, self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::Interrupted => continue,
                    std::io::ErrorKind::WouldBlock => match self.sock.poll_readable(cx) {
                        Poll::Pending => return Ok(()),
                        Poll::Ready(Ok(())) => continue,
                        Poll::Ready(Err(e)) => {
                            return Err(format!("failed to wait for an EtherCAT frame: {e}"));
                        }
                    },
                    _ => return Err(format!("failed to receive an EtherCAT frame: {e}")),
                }
            }
            let len = (n as usize).min(self.buf.len());
            if self.rx.receive_frame(&self.buf[..len]).is_err() {
                self.ignored.fetch_add(1, Ordering::Relaxed);
            }
        }
        // More may be waiting: come back after the other work of this poll.
        cx.waker().wake_by_ref();
        Ok(())
    }
}

impl Future for TxRx<'_> {
    /// Ok when `MainDevice::release_all` asked the driver to exit.
    type Output = Result<(), String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // EtherCrab wakes this waker when it queues a frame to send.
        this.tx.replace_waker(cx.waker());
        if this.tx.should_exit() {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = this.send_all(cx).and_then(|()| this.receive_all(cx)) {
            return Poll::Ready(Err(e));
        }
        Poll::Pending
    }
}

pub(crate) fn io_fail(ifname: &str, e: &std::io::Error) -> Fail {
    let code = match e.raw_os_error() {
        Some(libc::ENODEV) | Some(libc::ENXIO) | Some(libc::ENOENT) => CODE_NO_INTERFACE,
        Some(libc::EPERM) | Some(libc::EACCES) => CODE_PERMISSION,
        _ => CODE_IO,
    };
    let hint = if code == CODE_PERMISSION {
        " (raw sockets need CAP_NET_RAW and CAP_NET_ADMIN: run as root or `sudo setcap cap_net_raw,cap_net_admin+ep <binary>`)"
    } else if code == CODE_NO_INTERFACE {
        " (no such network interface)"
    } else {
        ""
    };
    fail(
        code,
        format!("ethercrab: cannot open interface \"{ifname}\": {e}{hint}"),
    )
}

/// Adapters that are up, not loopback, not wireless, by name. getifaddrs
/// (netlink) sees the caller's network namespace; /sys/class/net may not.
pub(crate) fn candidate_interfaces() -> Result<Vec<String>, Fail> {
    let mut names = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&mut ifap) != 0 {
            return Ok(names);
        }
        let mut p = ifap;
        while !p.is_null() {
            let ifa = &*p;
            let flags = ifa.ifa_flags;
            if !ifa.ifa_name.is_null()
                && flags & libc::IFF_UP as u32 != 0
                && flags & libc::IFF_LOOPBACK as u32 == 0
            {
                let n = CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
                if !names.contains(&n)
                    && !std::path::Path::new(&format!("/sys/class/net/{n}/wireless")).exists()
                {
                    names.push(n);
                }
            }
            p = ifa.ifa_next;
        }
        libc::freeifaddrs(ifap);
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_never_a_candidate() {
        let names = candidate_interfaces().unwrap_or_default();
        assert!(!names.iter().any(|n| n == "lo"));
    }
}
