//! A wake-up finer than tokio's timer, whose wheel ticks in milliseconds: a batch due to close in
//! 100 us must close then, not at the next millisecond (its members' deadlines are a millisecond
//! away). One thread waits on a channel with a timeout (a futex wait, to tens of microseconds) and
//! rings the dispatcher's loop when the latest time it was set to comes. Setting it wakes that
//! thread, so the dispatcher sets it only when the time it wants changes.

use std::cell::Cell;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The alarm: set it, and its receiver gets a message when the time comes.
pub(super) struct Alarm {
    set: Option<mpsc::Sender<Instant>>,
    thread: Option<JoinHandle<()>>,
    /// The time it is set to, until it rings.
    armed: Cell<Option<Instant>>,
}

impl Alarm {
    /// Starts the alarm's thread; the receiver rings.
    pub fn start() -> std::io::Result<(Alarm, UnboundedReceiver<()>)> {
        let (set, wishes) = mpsc::channel::<Instant>();
        let (ring, rings) = unbounded_channel();
        let thread =
            std::thread::Builder::new().name("spork-alarm".into()).spawn(move || keep(wishes, ring))?;
        Ok((Alarm { set: Some(set), thread: Some(thread), armed: Cell::new(None) }, rings))
    }

    /// Rings at `at` (replacing the time it was set to; nothing to do if that is `at` already). A
    /// ring that comes after the time changed is harmless: the loop finds nothing due and sleeps
    /// again.
    pub fn ring_at(&self, at: Instant) {
        if self.armed.get() == Some(at) {
            return;
        }
        if let Some(set) = &self.set {
            self.armed.set(Some(at));
            let _ = set.send(at);
        }
    }

    /// It rang: the next time asked for is set again, even if it is the same.
    pub fn rang(&self) {
        self.armed.set(None);
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.set = None; // the thread sees its channel closed and ends
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The alarm's thread: waits for the latest wish, rings when it is due.
fn keep(wishes: mpsc::Receiver<Instant>, ring: UnboundedSender<()>) {
    let mut due: Option<Instant> = None;
    loop {
        let wish = match due {
            Some(at) => wishes.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => wishes.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match wish {
            Ok(at) => due = Some(at),
            Err(RecvTimeoutError::Timeout) => {
                due = None;
                if ring.send(()).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn it_rings_once_at_the_latest_time_it_was_set_to() {
        let (alarm, mut rings) = Alarm::start().expect("a thread");
        let t0 = Instant::now();
        alarm.ring_at(t0 + Duration::from_secs(3600));
        alarm.ring_at(t0 + Duration::from_micros(200));
        alarm.ring_at(t0 + Duration::from_micros(200)); // unchanged: not sent again
        rings.recv().await.expect("a ring");
        assert!(Instant::now() >= t0 + Duration::from_micros(200), "never early");
        assert!(rings.try_recv().is_err(), "the replaced time does not ring as well");
        alarm.rang();
        let again = Instant::now() + Duration::from_micros(100);
        alarm.ring_at(again);
        alarm.ring_at(again);
        rings.recv().await.expect("set again after ringing, it rings again");
        assert!(rings.try_recv().is_err(), "once");
        drop(alarm);
        assert!(rings.recv().await.is_none(), "dropping the alarm ends its thread");
    }
}
