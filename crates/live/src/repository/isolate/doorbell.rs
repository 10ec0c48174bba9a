//! A call's hand-off through the window's first bytes instead of the socket: the server writes the
//! call's message there and bumps a sequence number, the kernel process answers the same way. Each
//! side polls the other's number for a while (no system call on the fast path: a cache line moves
//! between cores), then sleeps in `poll` on the socket, which now carries only one-byte wake-ups and
//! the end of the stream when either side goes. A side rings (writes a byte) only when the other
//! said it sleeps, so back-to-back calls make no system call at all.
//!
//! A kernel process can scribble over the whole header: the server reads a message's length once,
//! bounds it, and copies the bytes out before decoding them, and waits for exactly the number it
//! sent, so a wrong number only makes that call time out.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use crate::repository::shm::Window;

/// The header's size: tensors start past it.
pub const HEADER: usize = 64 << 10;

/// Where the header's words and messages lie (each word on a cache line of its own).
const REQ_SEQ: usize = 0;
const DONE_SEQ: usize = 64;
const SERVER_ASLEEP: usize = 128;
const KERNEL_ASLEEP: usize = 192;
const REQUEST_AT: usize = 256;
const REPLY_AT: usize = HEADER / 2;

/// The longest call message (descriptors of the tensors) and reply the header holds.
pub const REQUEST_MAX: usize = REPLY_AT - REQUEST_AT - 4;
/// The longest reply.
pub const REPLY_MAX: usize = HEADER - REPLY_AT - 4;

/// How long a kernel process polls for the next call before it sleeps. A round trip through two
/// sleeping processes costs two wake-ups (about 20 us each on a 2-core VM); polling keeps both
/// awake across back-to-back calls, at most this much CPU per wait.
pub const SPIN: Duration = Duration::from_micros(50);

/// How long the server's worker polls for a call's answer before it sleeps, at least: a sleeping
/// server costs a wake-up (20-50 us on a 2-core VM) on top of the kernel's own time.
pub const SPIN_REPLY: Duration = Duration::from_micros(200);

/// How long it polls at most: past this a wake-up is a small part of the call.
pub const SPIN_REPLY_MAX: Duration = Duration::from_millis(5);

/// How long the server polls for an answer when recent calls took `recent`: twice that, at least
/// [`SPIN_REPLY`]; calls longer than [`SPIN_REPLY_MAX`] get [`SPIN_REPLY`] only, their wake-up being a
/// small part of them and a core's polling for them a large waste.
pub fn spin_for(recent: Duration) -> Duration {
    let twice = recent.saturating_mul(2);
    if twice > SPIN_REPLY_MAX { SPIN_REPLY } else { twice.max(SPIN_REPLY) }
}

/// Polling past this long yields the core at each look, so the other threads on it run.
const YIELD_AFTER: Duration = Duration::from_micros(20);

/// Which side of the window this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The server: sends calls, waits for answers.
    Server,
    /// The kernel process: waits for calls, sends answers.
    Kernel,
}

impl Side {
    /// The words this side writes and waits on: (its own number, the number it waits for, its own
    /// asleep flag, the other's asleep flag), and where its message and the other's lie.
    fn layout(self) -> (usize, usize, usize, usize, usize, usize) {
        match self {
            Side::Server => (REQ_SEQ, DONE_SEQ, SERVER_ASLEEP, KERNEL_ASLEEP, REQUEST_AT, REPLY_AT),
            Side::Kernel => (DONE_SEQ, REQ_SEQ, KERNEL_ASLEEP, SERVER_ASLEEP, REPLY_AT, REQUEST_AT),
        }
    }
}

/// Why a wait ended without the number it waited for.
#[derive(Debug)]
pub enum Woken {
    /// The other side closed its end of the socket (it ended or died).
    Closed,
    /// The wait passed its deadline.
    TimedOut,
    /// The socket failed.
    Io(std::io::Error),
}

/// A word of the header.
fn word(w: &Window, at: usize) -> &AtomicU32 {
    let bytes = w.slice(at, 4).expect("the header lies inside every window");
    // SAFETY: 4 bytes inside the mapping, 4-aligned (the mapping is page-aligned, `at` a multiple of
    // 64); the other process touches them only through atomics too.
    unsafe { &*bytes.as_ptr().cast::<AtomicU32>() }
}

/// Puts `msg` in this side's message slot and bumps its number to `seq`; rings the socket if the
/// other side sleeps. `msg` must fit ([`REQUEST_MAX`] or [`REPLY_MAX`]).
pub fn send(w: &mut Window, side: Side, seq: u32, msg: &[u8], sock: &mut UnixStream) -> std::io::Result<()> {
    let (mine, _, _, theirs_asleep, at, _) = side.layout();
    let room = if side == Side::Server { REQUEST_MAX } else { REPLY_MAX };
    if msg.len() > room {
        return Err(std::io::Error::other(format!(
            "a message of {} bytes, past the header's {room}",
            msg.len()
        )));
    }
    if let Some(slot) = w.slice_mut(at, 4 + msg.len()) {
        slot[..4].copy_from_slice(&(msg.len() as u32).to_le_bytes());
        slot[4..].copy_from_slice(msg);
    }
    word(w, mine).store(seq, SeqCst);
    if word(w, theirs_asleep).load(SeqCst) != 0 {
        sock.write_all(&[1])?;
    }
    Ok(())
}

/// Rings a kernel process that sleeps, so that it is polling by the time its next call arrives: a
/// request's decoding and dispatch then hide its wake-up. Never blocks (a kernel that does not read
/// its socket only fills it); a kernel that does not sleep is not rung.
pub fn wake(w: &Window, sock: &UnixStream) {
    if word(w, KERNEL_ASLEEP).load(SeqCst) != 0 {
        // SAFETY: a valid socket and a one-byte buffer.
        unsafe {
            libc::send(sock.as_raw_fd(), [1u8].as_ptr().cast(), 1, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        };
    }
}

/// Waits until the other side's number is `seq` (polling for `spin` first, then sleeping until
/// `deadline` if any), then copies its message into `out` (at most `max` bytes).
pub fn wait(
    w: &Window,
    side: Side,
    seq: u32,
    spin: Duration,
    deadline: Option<Instant>,
    sock: &mut UnixStream,
    out: &mut Vec<u8>,
) -> Result<(), Woken> {
    let (_, theirs, my_asleep, _, _, at) = side.layout();
    let arrived = || word(w, theirs).load(SeqCst) == seq;
    let mut start = Instant::now();
    while !arrived() {
        let waited = start.elapsed();
        if waited < spin {
            if waited < YIELD_AFTER {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            continue;
        }
        word(w, my_asleep).store(1, SeqCst);
        let slept = if arrived() { Ok(()) } else { sleep(sock, deadline) };
        word(w, my_asleep).store(0, SeqCst);
        slept?;
        // A kernel process woken before its call arrives (the server's `wake`) polls afresh.
        if side == Side::Kernel {
            start = Instant::now();
        }
    }
    let max = if side == Side::Server { REPLY_MAX } else { REQUEST_MAX };
    let len = w.slice(at, 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    out.clear();
    out.extend_from_slice(w.slice(at + 4, len.min(max)).unwrap_or_default());
    Ok(())
}

/// Sleeps until the socket has a byte (read and dropped: wake-ups carry nothing), closes, or the
/// deadline passes.
fn sleep(sock: &mut UnixStream, deadline: Option<Instant>) -> Result<(), Woken> {
    let ms = match deadline {
        None => -1,
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Woken::TimedOut);
            }
            i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX)
        }
    };
    let mut p = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        0 => Ok(()),
        n if n < 0 => {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted { Ok(()) } else { Err(Woken::Io(e)) }
        }
        _ => {
            let mut bytes = [0u8; 64];
            match sock.read(&mut bytes) {
                Ok(0) => Err(Woken::Closed),
                Ok(_) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(()),
                Err(e) => Err(Woken::Io(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{FromRawFd, OwnedFd};

    fn pair() -> (Window, Window) {
        let a = Window::create(HEADER + 4096, crate::repository::shm::Writers::All).unwrap();
        // SAFETY: a duplicate of a's descriptor.
        let dup = unsafe { OwnedFd::from_raw_fd(libc::dup(a.raw_fd())) };
        let b = Window::map(dup, a.len(), true).unwrap();
        (a, b)
    }

    #[test]
    fn calls_and_answers_cross_with_and_without_sleeping_and_a_closed_side_is_seen() {
        let (mut server, mut kernel) = pair();
        let (mut s_sock, mut k_sock) = UnixStream::pair().unwrap();
        let echo = std::thread::spawn(move || {
            let mut msg = Vec::new();
            for seq in 1..=3u32 {
                // The third call comes after the server slept 50 ms: this side sleeps in poll.
                if wait(&kernel, Side::Kernel, seq, Duration::from_micros(10), None, &mut k_sock, &mut msg)
                    .is_err()
                {
                    return;
                }
                msg.reverse();
                send(&mut kernel, Side::Kernel, seq, &msg, &mut k_sock).unwrap();
            }
            let mut msg = Vec::new();
            let end = wait(&kernel, Side::Kernel, 4, Duration::ZERO, None, &mut k_sock, &mut msg);
            assert!(matches!(end, Err(Woken::Closed)), "the server's end closed");
        });
        let mut reply = Vec::new();
        for (seq, msg) in [(1u32, &b"abc"[..]), (2, b"hello"), (3, b"xy")] {
            if seq == 3 {
                std::thread::sleep(Duration::from_millis(50));
            }
            send(&mut server, Side::Server, seq, msg, &mut s_sock).unwrap();
            let deadline = Some(Instant::now() + Duration::from_secs(10));
            wait(&server, Side::Server, seq, Duration::ZERO, deadline, &mut s_sock, &mut reply).unwrap();
            assert_eq!(reply, msg.iter().rev().copied().collect::<Vec<_>>());
        }
        let deadline = Some(Instant::now() + Duration::from_millis(20));
        let late = wait(&server, Side::Server, 9, Duration::ZERO, deadline, &mut s_sock, &mut reply);
        assert!(matches!(late, Err(Woken::TimedOut)), "no answer 9 comes: {late:?}");
        drop(s_sock);
        echo.join().unwrap();
    }

    /// Polls `cond` up to 10 s (a loaded machine's scheduling, not what is tested).
    fn eventually(cond: impl Fn() -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if cond() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn wake_rings_only_a_sleeping_kernel_never_blocks_and_the_woken_kernel_polls_afresh() {
        let (server, mut kernel) = pair();
        let (s_sock, k_sock) = UnixStream::pair().unwrap();
        k_sock.set_nonblocking(true).unwrap();
        let unread = |mut s: &UnixStream| s.read(&mut [0u8; 1 << 16]).map_or(0, |n| n);
        wake(&server, &s_sock);
        assert_eq!(unread(&k_sock), 0, "a kernel that does not sleep is not rung");
        word(&kernel, KERNEL_ASLEEP).store(1, SeqCst);
        wake(&server, &s_sock);
        assert_eq!(unread(&k_sock), 1, "a sleeping kernel is rung once");
        // Nobody reads: the socket fills and each wake returns all the same.
        for _ in 0..200_000 {
            wake(&server, &s_sock);
        }
        while unread(&k_sock) > 0 {}
        word(&kernel, KERNEL_ASLEEP).store(0, SeqCst);
        k_sock.set_nonblocking(false).unwrap();

        // A kernel that polls 1 s and then sleeps: woken with no call, it polls another second
        // (its asleep flag stays clear), and takes the call that comes meanwhile.
        let mut k_sock = k_sock;
        let poll = Duration::from_secs(1);
        let echo = std::thread::spawn(move || {
            let mut msg = Vec::new();
            wait(&kernel, Side::Kernel, 1, poll, None, &mut k_sock, &mut msg).unwrap();
            send(&mut kernel, Side::Kernel, 1, &msg, &mut k_sock).unwrap();
        });
        assert!(eventually(|| word(&server, KERNEL_ASLEEP).load(SeqCst) == 1), "it sleeps after 1 s");
        wake(&server, &s_sock);
        assert!(eventually(|| word(&server, KERNEL_ASLEEP).load(SeqCst) == 0), "the ring woke it");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            word(&server, KERNEL_ASLEEP).load(SeqCst),
            0,
            "woken, it polls again rather than sleeping"
        );
        let (mut server, mut s_sock) = (server, s_sock);
        send(&mut server, Side::Server, 1, b"hi", &mut s_sock).unwrap();
        let mut reply = Vec::new();
        let deadline = Some(Instant::now() + Duration::from_secs(10));
        wait(&server, Side::Server, 1, Duration::ZERO, deadline, &mut s_sock, &mut reply).unwrap();
        assert_eq!(reply, b"hi");
        echo.join().unwrap();
    }

    #[test]
    fn short_calls_are_polled_for_and_long_ones_slept_through() {
        assert_eq!(spin_for(Duration::ZERO), SPIN_REPLY);
        assert_eq!(spin_for(Duration::from_micros(300)), Duration::from_micros(600));
        assert_eq!(spin_for(Duration::from_millis(2)), Duration::from_millis(4));
        assert_eq!(spin_for(Duration::from_millis(16)), SPIN_REPLY);
    }

    #[test]
    fn a_length_scribbled_past_the_slot_is_cut_to_it_and_an_oversized_message_is_refused() {
        let (mut server, kernel) = pair();
        let (mut s_sock, _k) = UnixStream::pair().unwrap();
        let big = vec![0u8; REQUEST_MAX + 1];
        assert!(send(&mut server, Side::Server, 1, &big, &mut s_sock).is_err());
        // The kernel side claims a reply of 4 GiB.
        let mut k = kernel;
        k.slice_mut(REPLY_AT, 4).unwrap().copy_from_slice(&u32::MAX.to_le_bytes());
        word(&k, DONE_SEQ).store(5, SeqCst);
        let mut reply = Vec::new();
        wait(&server, Side::Server, 5, Duration::ZERO, None, &mut s_sock, &mut reply).unwrap();
        assert_eq!(reply.len(), REPLY_MAX);
    }
}
