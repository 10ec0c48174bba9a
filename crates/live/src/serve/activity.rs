//! What a connection is doing, for the rule that closes idle ones: requests in flight, answers
//! whose bytes are still going out, and when it last did either. A connection is idle once, for the
//! header timeout, it has had no request in flight and moved none of an unfinished answer's bytes.
//! A client reading a large answer slowly keeps its connection (before, it was closed two seconds
//! after the header timeout, its answer cut short: 3.6 of a 4 MB answer read at 200 KB/s); one
//! that reads nothing loses it, and its answer's hold on the memory budget with it. An answer's
//! bytes move when the socket takes them and when the client acknowledges them: the kernel's send
//! buffer (up to 4 MB) takes a writer's bytes again only once a good part of it has drained, so a
//! reader at 120 KB/s acknowledges for many seconds between the server's writes.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection's activity.
pub struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    writing: AtomicUsize,
    /// When a request or an answer last ended, in ms from `born`.
    done_ms: AtomicU64,
    /// When an answer's bytes last moved (into the socket, or acknowledged by the client), in ms
    /// from `born`.
    wrote_ms: AtomicU64,
    /// Bytes the socket has taken.
    written: AtomicU64,
    /// Bytes the client had acknowledged when last looked at.
    acked: AtomicU64,
}

/// A request in flight; its end marks the connection active now.
pub struct Busy(Arc<Activity>);

/// An answer not yet all written; its end (its last byte handed to the socket's buffers) marks the
/// connection active now.
pub struct Writing(Arc<Activity>);

impl Activity {
    /// A connection that has done nothing yet.
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            born: Instant::now(),
            in_flight: AtomicUsize::new(0),
            writing: AtomicUsize::new(0),
            done_ms: AtomicU64::new(0),
            wrote_ms: AtomicU64::new(0),
            written: AtomicU64::new(0),
            acked: AtomicU64::new(0),
        })
    }

    /// Looks at what the client has acknowledged, `unsent` bytes (taken, not yet acknowledged)
    /// being in the socket's send queue: more than before is bytes moving.
    pub fn observe(&self, unsent: u64, now: Instant) {
        let acked = self.written.load(Ordering::Acquire).saturating_sub(unsent);
        if acked > self.acked.fetch_max(acked, Ordering::AcqRel) {
            self.wrote_ms.store(self.ms(now), Ordering::Release);
        }
    }

    /// A request begins.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// An answer begins to go out.
    pub fn answer(self: &Arc<Self>) -> Writing {
        self.writing.fetch_add(1, Ordering::AcqRel);
        Writing(self.clone())
    }

    /// How long the connection has been idle; `None` while a request is in flight. With an answer
    /// unfinished, since its bytes last moved (keep-alive pings move none of them, and count only
    /// once no answer is unfinished: from when the last one ended).
    pub fn idle_for(&self, now: Instant) -> Option<Duration> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let mut last = self.done_ms.load(Ordering::Acquire);
        if self.writing.load(Ordering::Acquire) > 0 {
            last = last.max(self.wrote_ms.load(Ordering::Acquire));
        }
        Some(now.saturating_duration_since(self.born).saturating_sub(Duration::from_millis(last)))
    }

    fn ms(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.born).as_millis()).unwrap_or(u64::MAX)
    }

    fn ended(&self, count: &AtomicUsize) {
        self.done_ms.store(self.ms(Instant::now()), Ordering::Release);
        count.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.ended(&self.0.in_flight);
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        self.0.ended(&self.0.writing);
    }
}

/// Bytes taken by TCP socket `fd` and not yet acknowledged by its peer (`SIOCOUTQ`); `None` if the
/// socket will not say.
pub fn unsent(fd: std::os::fd::RawFd) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: ioctl(2) SIOCOUTQ (TIOCOUTQ on Linux) on a socket writes one int into `n`; a closed or
    // reused descriptor makes it fail or answer for another socket, never write elsewhere.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    (r == 0).then(|| u64::try_from(n).unwrap_or(0))
}

/// A socket whose writes mark its connection's activity.
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    /// `inner`, reporting to `activity`.
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }

    fn wrote(&self, n: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = n
            && *n > 0
        {
            self.activity.written.fetch_add(*n as u64, Ordering::AcqRel);
            self.activity.wrote_ms.store(self.activity.ms(Instant::now()), Ordering::Release);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let n = Pin::new(&mut me.inner).poll_write(cx, buf);
        me.wrote(&n);
        n
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let n = Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        me.wrote(&n);
        n
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn busy_until_the_request_ends_then_idle_from_the_last_end() {
        let a = Activity::new();
        let busy = a.begin();
        assert_eq!(a.idle_for(a.born + 500 * MS), None, "a request in flight");
        let writing = a.answer();
        drop(busy);
        drop(writing);
        a.done_ms.store(100, Ordering::Release);
        assert_eq!(a.idle_for(a.born + 500 * MS), Some(400 * MS));
    }

    #[tokio::test]
    async fn an_unfinished_answer_is_idle_only_while_its_bytes_do_not_move() {
        let a = Activity::new();
        let (ours, _theirs) = tokio::io::duplex(1 << 16);
        let mut w = Watched::new(ours, a.clone());
        let at = |ms: u32| a.born + ms * MS;
        let _writing = a.answer();
        a.done_ms.store(100, Ordering::Release);
        a.wrote_ms.store(0, Ordering::Release);
        assert_eq!(a.idle_for(at(1_000)), Some(900 * MS), "nothing written since the request ended");
        a.done_ms.store(0, Ordering::Release);
        w.write_all(b"answer bytes").await.expect("write");
        let wrote = a.wrote_ms.load(Ordering::Acquire);
        assert_eq!(a.idle_for(at(wrote as u32 + 1_000)), Some(1_000 * MS), "from its last write");
        // The client acknowledges bytes the socket took earlier: they moved.
        let taken = a.written.load(Ordering::Acquire);
        a.wrote_ms.store(0, Ordering::Release);
        a.observe(taken, at(700));
        assert_eq!(a.wrote_ms.load(Ordering::Acquire), 0, "nothing acknowledged yet");
        a.observe(taken - 5, at(800));
        assert_eq!(a.wrote_ms.load(Ordering::Acquire), 800, "five bytes acknowledged");
        a.observe(taken - 5, at(900));
        assert_eq!(a.wrote_ms.load(Ordering::Acquire), 800, "no more since");
        drop(_writing);
        // No answer unfinished: writes (a keep-alive ping) no longer count, the last end does.
        a.done_ms.store(50, Ordering::Release);
        w.write_all(b"ping").await.expect("write");
        assert_eq!(a.idle_for(at(wrote as u32 + 1_000)), Some((wrote as u32 + 950) * MS));
    }
}
