//! The hardware dispatch engine's golden model: efficient-first placement, cycle by cycle.
//!
//! [`select`] is the rule (the host's efficient-first dispatcher, in the engine's integer time):
//! among enabled elements holding the request's kernel whose finish `max(busy_until, now) + est`
//! meets the deadline, take the busiest (the latest start), ties to the lowest index; none means
//! reject. [`Engine`] wraps the rule in the RTL's timing (queue latency, one decision per cycle,
//! registered outputs) so co-simulation can compare every port on every cycle.

use std::collections::VecDeque;

/// Processing elements the engine books.
pub const PES: usize = 8;
/// Descriptors the queue holds.
pub const QUEUE_DEPTH: usize = 16;
/// Cycles from a push to the descriptor being poppable.
pub const QUEUE_LATENCY: u64 = 2;
/// Time is 48-bit cycles in the RTL (3.2 days at 1 GHz); arithmetic wraps like it.
pub const TIME_MASK: u64 = (1 << 48) - 1;
/// Estimates are 24-bit cycles.
pub const EST_MASK: u32 = (1 << 24) - 1;

/// A request as the host hands it to the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The host's request id, echoed in the [`Decision`].
    pub id: u16,
    /// 2-bit kernel code (`Kernel::code`).
    pub kernel: u8,
    /// Estimated cycles on an element (24 bits).
    pub est: u32,
    /// Absolute deadline in engine cycles (48 bits).
    pub deadline: u64,
}

/// One processing element's booking state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Element {
    /// Whether the element takes new requests.
    pub enabled: bool,
    /// 2-bit code (`Kernel::code`) of the kernel the element holds.
    pub kernel: u8,
    /// The finish of the last request booked on it, in engine cycles (48 bits); 0 until then.
    pub busy_until: u64,
}

/// What the engine answers for one descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Booked on an element (the RTL's `grant_*` outputs).
    Grant {
        /// The descriptor's id.
        id: u16,
        /// The element booked.
        pe: u8,
        /// The cycle the request starts: the element's `busy_until`, or the pop's cycle if later.
        start: u64,
        /// `start + est`: the element's new `busy_until`.
        finish: u64,
    },
    /// No enabled element holding the kernel can finish it by its deadline; the host runs it on a CPU
    /// (the RTL's `reject_*` outputs).
    Reject {
        /// The descriptor's id.
        id: u16,
    },
}

/// Efficient-first: the chosen element with its start and finish, or `None` to reject.
pub fn select(now: u64, elements: &[Element], d: &Descriptor) -> Option<(usize, u64, u64)> {
    let mut best: Option<(usize, u64, u64)> = None;
    for (i, e) in elements.iter().enumerate() {
        let start = e.busy_until.max(now);
        let finish = (start + u64::from(d.est & EST_MASK)) & TIME_MASK;
        let feasible = e.enabled && e.kernel == d.kernel && finish <= d.deadline;
        if feasible && best.is_none_or(|(_, s, _)| start > s) {
            best = Some((i, start, finish));
        }
    }
    best
}

/// One element's configuration (`cfg_*`), written whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The element (3 bits).
    pub pe: u8,
    /// The kernel code it holds (2 bits).
    pub kernel: u8,
    /// Whether it takes new requests.
    pub enabled: bool,
    /// When its queue drains, in engine cycles (48 bits): the host's booking, which knows what the
    /// engine cannot (work booked elsewhere, a board running late). A grant to the same element in
    /// the same cycle wins over it.
    pub busy_until: u64,
}

/// What the host drives in one cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// A descriptor to push (`push` and `req_*`); dropped if the queue is full this cycle.
    pub push: Option<Descriptor>,
    /// No pop this cycle (`hold`).
    pub hold: bool,
    /// Configures one element (`cfg_*`), effective from the next cycle.
    pub configure: Option<Config>,
}

/// What the engine's outputs show during one cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outputs {
    /// The engine's cycle counter (`now`).
    pub now: u64,
    /// The queue holds [`QUEUE_DEPTH`] descriptors: a push this cycle is dropped (`full`).
    pub full: bool,
    /// The decision on the descriptor popped in the previous cycle, if any (`grant_*`, `reject_*`).
    pub decision: Option<Decision>,
}

/// The engine, cycle-accurate at its ports.
#[derive(Clone, Debug, Default)]
pub struct Engine {
    now: u64,
    elements: [Element; PES],
    /// Queued descriptors with the cycle they become poppable.
    queue: VecDeque<(u64, Descriptor)>,
    out: Option<Decision>,
}

impl Engine {
    /// The engine at power-up: cycle 0, empty queue, every element disabled, idle and holding kernel 0.
    pub fn new() -> Engine {
        Engine::default()
    }

    /// The cycle the next call to [`Engine::cycle`] runs.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The elements' configuration and bookings.
    pub fn elements(&self) -> &[Element; PES] {
        &self.elements
    }

    /// Runs one clock cycle: returns the outputs seen during it, then takes the rising edge.
    pub fn cycle(&mut self, inputs: &Inputs) -> Outputs {
        let full = self.queue.len() >= QUEUE_DEPTH;
        let shown = Outputs { now: self.now, full, decision: self.out };
        // The pop, decided combinationally on the state before the edge.
        self.out = None;
        let mut granted = None;
        if !inputs.hold && self.queue.front().is_some_and(|&(ready, _)| ready <= self.now) {
            let (_, d) = self.queue.pop_front().expect("front checked");
            self.out = Some(match select(self.now, &self.elements, &d) {
                Some((pe, start, finish)) => {
                    self.elements[pe].busy_until = finish;
                    granted = Some(pe);
                    Decision::Grant { id: d.id, pe: pe as u8, start, finish }
                }
                None => Decision::Reject { id: d.id },
            });
        }
        if let Some(c) = inputs.configure {
            let pe = usize::from(c.pe) % PES;
            let e = &mut self.elements[pe];
            e.kernel = c.kernel & 3;
            e.enabled = c.enabled;
            if granted != Some(pe) {
                e.busy_until = c.busy_until & TIME_MASK;
            }
        }
        if let Some(d) = inputs.push
            && !full
        {
            let d = Descriptor {
                kernel: d.kernel & 3,
                est: d.est & EST_MASK,
                deadline: d.deadline & TIME_MASK,
                ..d
            };
            self.queue.push_back((self.now + QUEUE_LATENCY, d));
        }
        self.now = (self.now + 1) & TIME_MASK;
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pe(kernel: u8, busy_until: u64) -> Element {
        Element { enabled: true, kernel, busy_until }
    }

    fn req(est: u32, deadline: u64) -> Descriptor {
        Descriptor { id: 7, kernel: 0, est, deadline }
    }

    #[test]
    fn picks_the_busiest_element_that_meets_the_deadline() {
        let pes = [pe(0, 10), pe(0, 50), pe(0, 90)];
        // At now 0, est 20: finishes 30, 70, 110. Deadline 100 rules out element 2.
        assert_eq!(select(0, &pes, &req(20, 100)), Some((1, 50, 70)));
        assert_eq!(select(0, &pes, &req(20, 110)), Some((2, 90, 110)));
        assert_eq!(select(0, &pes, &req(20, 29)), None);
    }

    #[test]
    fn idle_elements_tie_to_the_lowest_index() {
        let pes = [pe(0, 3), pe(0, 0), pe(0, 5)];
        assert_eq!(select(10, &pes, &req(1, 100)), Some((0, 10, 11)));
    }

    #[test]
    fn kernel_and_enable_filter() {
        let mut pes = [pe(1, 0), pe(0, 0)];
        assert_eq!(select(0, &pes, &req(1, 100)), Some((1, 0, 1)));
        pes[1].enabled = false;
        assert_eq!(select(0, &pes, &req(1, 100)), None);
    }

    #[test]
    fn engine_decides_one_cycle_after_the_pop() {
        let mut e = Engine::new();
        e.cycle(&Inputs {
            configure: Some(Config { enabled: true, ..Config::default() }),
            ..Inputs::default()
        });
        let push = Some(req(5, 1000));
        let mut seen = Vec::new();
        seen.push(e.cycle(&Inputs { push, ..Inputs::default() }));
        for _ in 0..4 {
            seen.push(e.cycle(&Inputs::default()));
        }
        let decided: Vec<_> = seen.iter().filter_map(|o| o.decision.map(|d| (o.now, d))).collect();
        // Pushed in cycle 1, poppable in cycle 3, shown in cycle 4.
        assert_eq!(decided, vec![(4, Decision::Grant { id: 7, pe: 0, start: 3, finish: 8 })]);
    }

    #[test]
    fn the_host_writes_a_booking_and_a_same_cycle_grant_wins() {
        let mut e = Engine::new();
        let busy = |pe, busy_until| Config { pe, kernel: 0, enabled: true, busy_until };
        e.cycle(&Inputs { configure: Some(busy(0, 500)), ..Inputs::default() });
        assert_eq!(e.elements()[0].busy_until, 500);
        e.cycle(&Inputs { push: Some(req(5, 1000)), ..Inputs::default() });
        e.cycle(&Inputs::default());
        // The pop (cycle 3) books element 0 until 505; the write in the same cycle loses.
        e.cycle(&Inputs { configure: Some(busy(0, 9)), ..Inputs::default() });
        assert_eq!(e.elements()[0].busy_until, 505);
        e.cycle(&Inputs { configure: Some(busy(0, 9)), ..Inputs::default() });
        assert_eq!(e.elements()[0].busy_until, 9);
    }
}
