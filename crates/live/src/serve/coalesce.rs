//! One write per gRPC answer. h2 writes a DATA frame's payload straight from the body's buffer and
//! only then encodes the next frame, so every answer's trailers (its `grpc-status`) left in a
//! second write after its data: on a 2-core VM 60 us later for a 64 KB answer (the loopback's
//! processing of the first write), which the client waited out; Triton's answers leave in one.
//! [`Coalesced`] holds a connection's writes and lets them go in one write at h2's second flush
//! (the one after its last frame) or, if the connection makes no second flush, on the next poll,
//! for which the first flush wakes the task. Held bytes are bounded: past [`HOLD`] they go at once.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes held per connection: a 64 KB answer with its frames; larger writes go through.
pub const HOLD: usize = 128 << 10;

/// A connection whose writes are held until the next flush after the first (see the module).
pub struct Coalesced<S> {
    inner: S,
    held: Vec<u8>,
    /// How much of `held` the socket has taken.
    sent: usize,
    /// A flush was put off: the next flush, read or write lets the held bytes go.
    owed: bool,
}

impl<S: AsyncWrite + Unpin> Coalesced<S> {
    /// `inner`, with nothing held.
    pub fn new(inner: S) -> Self {
        Coalesced { inner, held: Vec::new(), sent: 0, owed: false }
    }

    /// Writes what is held, in as few writes as the socket takes.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.held.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.held.clear();
        self.sent = 0;
        self.owed = false;
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: lets the held ones go first if they would pass [`HOLD`].
    /// Whether `len` bytes then fit.
    fn room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<bool>> {
        if self.held.len() + len > HOLD {
            ready!(self.drain(cx))?;
        }
        Poll::Ready(Ok(len <= HOLD))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalesced<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        // A flush put off: the task was woken for it. Pending leaves the socket's write waker set.
        if me.owed
            && let Poll::Ready(Err(e)) = me.drain(cx)
        {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalesced<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if !ready!(me.room(cx, buf.len()))? {
            return Pin::new(&mut me.inner).poll_write(cx, buf);
        }
        me.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let len = bufs.iter().map(|b| b.len()).sum();
        if !ready!(me.room(cx, len))? {
            return Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            me.held.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if me.held.is_empty() {
            return Pin::new(&mut me.inner).poll_flush(cx);
        }
        if !me.owed {
            // The first flush since bytes were held: h2 may have a frame still to encode. Put it
            // off, and have the task polled again so that it is not put off for long.
            me.owed = true;
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(me.drain(cx))?;
        Pin::new(&mut me.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.drain(cx))?;
        Pin::new(&mut me.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn writes_leave_together_at_the_second_flush_or_the_next_read() {
        let (ours, mut theirs) = tokio::io::duplex(1 << 20);
        let mut c = Coalesced::new(ours);
        c.write_all(b"data").await.expect("write");
        c.flush().await.expect("first flush");
        let mut got = [0u8; 16];
        let nothing = tokio::time::timeout(std::time::Duration::from_millis(50), theirs.read(&mut got)).await;
        assert!(nothing.is_err(), "held after the first flush");
        c.write_all(b"+trailers").await.expect("write");
        c.flush().await.expect("second flush");
        let n = theirs.read(&mut got).await.expect("read");
        assert_eq!(&got[..n], b"data+trailers", "one write");
        // A flush put off goes at the connection's next read.
        c.write_all(b"ping").await.expect("write");
        c.flush().await.expect("flush");
        theirs.write_all(b"x").await.expect("peer writes");
        let mut one = [0u8; 1];
        c.read_exact(&mut one).await.expect("read");
        let n = theirs.read(&mut got).await.expect("read");
        assert_eq!(&got[..n], b"ping");
    }

    #[tokio::test]
    async fn past_the_bound_bytes_go_through_and_shutdown_lets_everything_go() {
        let (ours, mut theirs) = tokio::io::duplex(4 << 20);
        let mut c = Coalesced::new(ours);
        let big = vec![7u8; HOLD + 1];
        c.write_all(b"head").await.expect("write");
        c.write_all(&big).await.expect("write");
        let mut got = vec![0u8; HOLD + 5];
        theirs.read_exact(&mut got).await.expect("the head and the big write, not held");
        assert_eq!(&got[..4], b"head");
        c.write_all(b"tail").await.expect("write");
        c.shutdown().await.expect("shutdown");
        let mut rest = Vec::new();
        theirs.read_to_end(&mut rest).await.expect("read");
        assert_eq!(rest, b"tail");
    }
}
