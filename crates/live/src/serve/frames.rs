//! An HTTP body of a few buffers sent as they are: an answer's JSON head and its binary outputs
//! (the kernel's own buffers) go out in one vectored write, none copied into one.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// The buffers, in order, and their bytes still to send (the exact length the response states).
pub struct Frames {
    parts: VecDeque<Bytes>,
    left: u64,
}

impl Frames {
    /// A body of `parts`, in order.
    pub fn new(parts: impl IntoIterator<Item = Bytes>) -> Frames {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|b| !b.is_empty()).collect();
        let left = parts.iter().map(|b| b.len() as u64).sum();
        Frames { parts, left }
    }
}

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let me = self.get_mut();
        let next = me.parts.pop_front();
        if let Some(b) = &next {
            me.left -= b.len() as u64;
        }
        Poll::Ready(next.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// The parts come out in order, the empty ones dropped, and the length stated is theirs.
    #[tokio::test]
    async fn parts_come_out_in_order_with_their_exact_length() {
        let body = Frames::new([Bytes::from_static(b"{\"a\":1}"), Bytes::new(), Bytes::from(vec![7u8; 5])]);
        assert_eq!(body.size_hint().exact(), Some(12));
        let all = body.collect().await.unwrap_or_else(|e| match e {}).to_bytes();
        assert_eq!(&all[..], b"{\"a\":1}\x07\x07\x07\x07\x07");
        assert!(Frames::new([]).is_end_stream());
    }
}
