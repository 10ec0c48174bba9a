//! The hardware request-queue/dispatch engine: efficient-first placement in one cycle per request,
//! chosen by a three-level compare-select tree over the eight elements.
//!
//! The host pushes request descriptors (id, kernel, estimated cycles, absolute deadline in cycles)
//! into a 16-deep queue. Every cycle the engine pops the head, if any and unless `hold` is high, and for each of its eight
//! processing elements computes when the request would start (`max(busy_until, now)`) and finish.
//! Among the enabled elements configured with the request's kernel whose finish meets the deadline
//! it picks the busiest (the latest start; ties to the lowest index), books it (`busy_until =
//! finish`) and reports a grant; when none can meet the deadline it reports a reject, and the host
//! runs the request on a CPU. Decisions are registered: they appear the cycle after the pop.
//! `spork_golden::dispatch` is the cycle-accurate golden model of this behaviour.

use rust_hdl::prelude::*;

/// Processing elements the engine books.
pub const PES: usize = 8;

/// The request-queue/dispatch engine: a 16-deep descriptor queue and efficient-first booking of eight
/// processing elements, one decision per cycle (`spork_golden::dispatch::Engine` is its cycle-accurate
/// model).
///
/// Latency: a descriptor pushed in cycle `t` (inputs are sampled on the rising edge that ends the
/// cycle) can be popped from cycle `t + 2`; the decision on a descriptor popped in cycle `p` is on the
/// grant or reject outputs in cycle `p + 1`: three cycles from push to decision when the queue was
/// empty and `hold` stays low. Throughput: one push and one decision per cycle. Back-pressure: `full`
/// (pushes are dropped while it is high) and `hold` (no pops while it is high); decisions cannot be
/// stalled, each is shown for exactly one cycle.
///
/// ### Inputs
///
/// * [`clock`](Self::clock) Every register, the cycle counter and the queue run on its rising edge.
/// * [`cfg_we`](Self::cfg_we) Configures element [`cfg_pe`](Self::cfg_pe) with
///   [`cfg_kernel`](Self::cfg_kernel), [`cfg_enable`](Self::cfg_enable) and
///   [`cfg_busy`](Self::cfg_busy) on the rising edge.
/// * [`cfg_pe`](Self::cfg_pe) 3-bit index (0..=7) of the element configured.
/// * [`cfg_kernel`](Self::cfg_kernel) 2-bit kernel code (`Kernel::code`) the element holds.
/// * [`cfg_enable`](Self::cfg_enable) Whether the element takes new requests.
/// * [`cfg_busy`](Self::cfg_busy) 48-bit cycle the element's queue drains (its `busy_until`), as the
///   host books it; a grant to the same element on the same edge wins.
/// * [`hold`](Self::hold) No pop this cycle; the head waits.
/// * [`push`](Self::push) Pushes the descriptor on the `req_*` ports; dropped while `full` is high.
/// * [`req_id`](Self::req_id) 16-bit request id, echoed on the decision.
/// * [`req_kernel`](Self::req_kernel) 2-bit kernel code the request needs.
/// * [`req_est`](Self::req_est) 24-bit estimated run time on an element, in cycles.
/// * [`req_deadline`](Self::req_deadline) 48-bit absolute deadline in `now`'s cycles: the latest
///   acceptable finish.
///
/// ### Outputs
///
/// * [`full`](Self::full) The queue holds 16 descriptors: a push this cycle is dropped.
/// * [`now`](Self::now) 48-bit cycle counter (0 at power-up, +1 per cycle, wraps at 2^48): the time
///   base of deadlines, starts and finishes.
/// * [`grant_valid`](Self::grant_valid) High for one cycle, the cycle after a pop that found an
///   element.
/// * [`grant_id`](Self::grant_id) 16-bit id of the granted request.
/// * [`grant_pe`](Self::grant_pe) 3-bit index of the element booked.
/// * [`grant_start`](Self::grant_start) 48-bit cycle the request starts on it: `max(busy_until, now)`
///   at the pop.
/// * [`grant_finish`](Self::grant_finish) 48-bit cycle it finishes, `start + est`: the element's new
///   `busy_until`.
/// * [`reject_valid`](Self::reject_valid) High for one cycle, the cycle after a pop no element could
///   take by its deadline; the host runs the request on a CPU.
/// * [`reject_id`](Self::reject_id) 16-bit id of the rejected request.
///
/// At most one of `grant_valid` and `reject_valid` is high in a cycle. The `grant_*` and `reject_id`
/// values are meaningful only while their valid is high (they hold the last decision's values).
///
/// ### Hazards
///
/// * `full` gives no error: a push while it is high is lost, even when a pop frees a slot that cycle.
///   The host must check `full` in the cycle it pushes.
/// * Configuration takes effect on the edge: a pop in the same cycle still sees the old kernel,
///   enable and `busy_until`. A configuration writes all three: a host that only changes the kernel
///   writes back the `busy_until` it last saw granted.
/// * Between configurations `busy_until` is the booked estimate: the engine learns that work really
///   finished later (or was booked elsewhere) only when the host writes it.
/// * Time wraps at 2^48 cycles (3.2 days at 1 GHz): a finish past the wrap compares as early.
#[derive(LogicBlock, Default)]
pub struct Dispatch {
    /// The clock; everything is registered on its rising edge.
    pub clock: Signal<In, Clock>,
    /// Configures element `cfg_pe` with `cfg_kernel` and `cfg_enable` on the rising edge.
    pub cfg_we: Signal<In, Bit>,
    /// Index (0..=7) of the element `cfg_we` configures.
    pub cfg_pe: Signal<In, Bits<3>>,
    /// 2-bit kernel code (`Kernel::code`) the configured element holds.
    pub cfg_kernel: Signal<In, Bits<2>>,
    /// Whether the configured element takes new requests.
    pub cfg_enable: Signal<In, Bit>,
    /// The configured element's `busy_until` (the host's booking), in `now`'s cycles.
    pub cfg_busy: Signal<In, Bits<48>>,
    /// Holds the queue: no pops while high (the host pauses dispatch, e.g. while it reconfigures).
    pub hold: Signal<In, Bit>,
    /// Pushes the `req_*` descriptor; dropped while `full` (the host must wait).
    pub push: Signal<In, Bit>,
    /// Request id, echoed on `grant_id` or `reject_id`.
    pub req_id: Signal<In, Bits<16>>,
    /// 2-bit kernel code the request needs.
    pub req_kernel: Signal<In, Bits<2>>,
    /// Estimated run time on an element, in cycles.
    pub req_est: Signal<In, Bits<24>>,
    /// Absolute deadline in `now`'s cycles: the latest acceptable finish.
    pub req_deadline: Signal<In, Bits<48>>,
    /// The queue holds 16 descriptors: a push this cycle is dropped.
    pub full: Signal<Out, Bit>,
    /// The engine's cycle counter, the time base of deadlines and grants.
    pub now: Signal<Out, Bits<48>>,
    /// High for one cycle, the cycle after a pop that booked an element.
    pub grant_valid: Signal<Out, Bit>,
    /// Id of the granted request; meaningful while `grant_valid`.
    pub grant_id: Signal<Out, Bits<16>>,
    /// Index of the element booked; meaningful while `grant_valid`.
    pub grant_pe: Signal<Out, Bits<3>>,
    /// Cycle the request starts on the element, `max(busy_until, now)` at the pop.
    pub grant_start: Signal<Out, Bits<48>>,
    /// Cycle the request finishes, `grant_start + est`: the element's new `busy_until`.
    pub grant_finish: Signal<Out, Bits<48>>,
    /// High for one cycle, the cycle after a pop that no element could take by its deadline.
    pub reject_valid: Signal<Out, Bit>,
    /// Id of the rejected request; meaningful while `reject_valid`.
    pub reject_id: Signal<Out, Bits<16>>,
    queue: SynchronousFIFO<Bits<90>, 4, 5, 1>,
    cycle: DFF<Bits<48>>,
    busy: [DFF<Bits<48>>; PES],
    pe_kernel: [DFF<Bits<2>>; PES],
    pe_enabled: [DFF<Bit>; PES],
    head_id: Signal<Local, Bits<16>>,
    head_kernel: Signal<Local, Bits<2>>,
    head_est: Signal<Local, Bits<48>>,
    head_deadline: Signal<Local, Bits<48>>,
    start: [Signal<Local, Bits<48>>; PES],
    finish: [Signal<Local, Bits<48>>; PES],
    feasible: [Signal<Local, Bit>; PES],
    pair_found: [Signal<Local, Bit>; 4],
    pair_best: [Signal<Local, Bits<3>>; 4],
    pair_start: [Signal<Local, Bits<48>>; 4],
    quad_found: [Signal<Local, Bit>; 2],
    quad_best: [Signal<Local, Bits<3>>; 2],
    quad_start: [Signal<Local, Bits<48>>; 2],
    found: Signal<Local, Bit>,
    best: Signal<Local, Bits<3>>,
    best_start: Signal<Local, Bits<48>>,
    best_finish: Signal<Local, Bits<48>>,
    g_valid: DFF<Bit>,
    g_id: DFF<Bits<16>>,
    g_pe: DFF<Bits<3>>,
    g_start: DFF<Bits<48>>,
    g_finish: DFF<Bits<48>>,
    r_valid: DFF<Bit>,
    r_id: DFF<Bits<16>>,
}

impl Logic for Dispatch {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, cycle, g_valid, g_id, g_pe, g_start, g_finish, r_valid, r_id);
        self.queue.clock.next = self.clock.val();
        self.cycle.d.next = self.cycle.q.val() + 1;
        // The queue: descriptors packed as deadline | est | kernel | id.
        self.queue.data_in.next = bit_cast::<90, 16>(self.req_id.val())
            | (bit_cast::<90, 2>(self.req_kernel.val()) << 16)
            | (bit_cast::<90, 24>(self.req_est.val()) << 18)
            | (bit_cast::<90, 48>(self.req_deadline.val()) << 42);
        self.queue.write.next = self.push.val() & !self.queue.full.val();
        self.queue.read.next = !self.queue.empty.val() & !self.hold.val();
        self.head_id.next = self.queue.data_out.val().get_bits::<16>(0);
        self.head_kernel.next = self.queue.data_out.val().get_bits::<2>(16);
        self.head_est.next = bit_cast::<48, 24>(self.queue.data_out.val().get_bits::<24>(18));
        self.head_deadline.next = self.queue.data_out.val().get_bits::<48>(42);
        for i in 0..8 {
            self.busy[i].clock.next = self.clock.val();
            self.busy[i].d.next = self.busy[i].q.val();
            self.pe_kernel[i].clock.next = self.clock.val();
            self.pe_kernel[i].d.next = self.pe_kernel[i].q.val();
            self.pe_enabled[i].clock.next = self.clock.val();
            self.pe_enabled[i].d.next = self.pe_enabled[i].q.val();
            if self.cfg_we.val() & (self.cfg_pe.val().index() == i) {
                self.pe_kernel[i].d.next = self.cfg_kernel.val();
                self.pe_enabled[i].d.next = self.cfg_enable.val();
                self.busy[i].d.next = self.cfg_busy.val();
            }
            self.start[i].next = self.cycle.q.val();
            if self.busy[i].q.val() > self.cycle.q.val() {
                self.start[i].next = self.busy[i].q.val();
            }
            self.finish[i].next = self.start[i].val() + self.head_est.val();
            self.feasible[i].next = self.pe_enabled[i].q.val()
                & (self.pe_kernel[i].q.val() == self.head_kernel.val())
                & (self.finish[i].val() <= self.head_deadline.val());
        }
        // Efficient-first as a three-level tree (pairs, quads, the whole): at each node the right
        // (higher-index) side wins only when it is feasible and starts strictly later, or the left is
        // infeasible, so the latest start wins with ties to the lowest index, as the scan in
        // `spork_golden::dispatch::select` does. Three compare-selects deep instead of eight in a chain.
        for i in 0..4 {
            self.pair_found[i].next = self.feasible[2 * i].val() | self.feasible[2 * i + 1].val();
            self.pair_best[i].next = (2 * i).to_bits();
            self.pair_start[i].next = self.start[2 * i].val();
            if self.feasible[2 * i + 1].val()
                & (!self.feasible[2 * i].val() | (self.start[2 * i + 1].val() > self.start[2 * i].val()))
            {
                self.pair_best[i].next = (2 * i + 1).to_bits();
                self.pair_start[i].next = self.start[2 * i + 1].val();
            }
        }
        for i in 0..2 {
            self.quad_found[i].next = self.pair_found[2 * i].val() | self.pair_found[2 * i + 1].val();
            self.quad_best[i].next = self.pair_best[2 * i].val();
            self.quad_start[i].next = self.pair_start[2 * i].val();
            if self.pair_found[2 * i + 1].val()
                & (!self.pair_found[2 * i].val()
                    | (self.pair_start[2 * i + 1].val() > self.pair_start[2 * i].val()))
            {
                self.quad_best[i].next = self.pair_best[2 * i + 1].val();
                self.quad_start[i].next = self.pair_start[2 * i + 1].val();
            }
        }
        self.found.next = self.quad_found[0].val() | self.quad_found[1].val();
        self.best.next = self.quad_best[0].val();
        self.best_start.next = self.quad_start[0].val();
        if self.quad_found[1].val()
            & (!self.quad_found[0].val() | (self.quad_start[1].val() > self.quad_start[0].val()))
        {
            self.best.next = self.quad_best[1].val();
            self.best_start.next = self.quad_start[1].val();
        }
        // One adder after the tree instead of a 48-bit finish carried through every select.
        self.best_finish.next = self.best_start.val() + self.head_est.val();
        self.g_valid.d.next = false;
        self.r_valid.d.next = false;
        if !self.queue.empty.val() & !self.hold.val() {
            if self.found.val() {
                self.g_valid.d.next = true;
                self.g_id.d.next = self.head_id.val();
                self.g_pe.d.next = self.best.val();
                self.g_start.d.next = self.best_start.val();
                self.g_finish.d.next = self.best_finish.val();
                for i in 0..8 {
                    if self.best.val().index() == i {
                        self.busy[i].d.next = self.best_finish.val();
                    }
                }
            } else {
                self.r_valid.d.next = true;
                self.r_id.d.next = self.head_id.val();
            }
        }
        self.full.next = self.queue.full.val();
        self.now.next = self.cycle.q.val();
        self.grant_valid.next = self.g_valid.q.val();
        self.grant_id.next = self.g_id.q.val();
        self.grant_pe.next = self.g_pe.q.val();
        self.grant_start.next = self.g_start.q.val();
        self.grant_finish.next = self.g_finish.q.val();
        self.reject_valid.next = self.r_valid.q.val();
        self.reject_id.next = self.r_id.q.val();
    }
}
