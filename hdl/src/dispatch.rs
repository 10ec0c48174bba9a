//! The hardware request-queue/dispatch engine: efficient-first placement in one cycle per request.
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

#[derive(LogicBlock, Default)]
pub struct Dispatch {
    pub clock: Signal<In, Clock>,
    /// Configures one element: which kernel it holds and whether it takes requests.
    pub cfg_we: Signal<In, Bit>,
    pub cfg_pe: Signal<In, Bits<3>>,
    pub cfg_kernel: Signal<In, Bits<2>>,
    pub cfg_enable: Signal<In, Bit>,
    /// Holds the queue: no pops while high (the host pauses dispatch, e.g. while it reconfigures).
    pub hold: Signal<In, Bit>,
    /// Pushes a descriptor; ignored while `full` (the host must wait).
    pub push: Signal<In, Bit>,
    pub req_id: Signal<In, Bits<16>>,
    pub req_kernel: Signal<In, Bits<2>>,
    pub req_est: Signal<In, Bits<24>>,
    pub req_deadline: Signal<In, Bits<48>>,
    pub full: Signal<Out, Bit>,
    /// The engine's cycle counter, the time base of deadlines and grants.
    pub now: Signal<Out, Bits<48>>,
    pub grant_valid: Signal<Out, Bit>,
    pub grant_id: Signal<Out, Bits<16>>,
    pub grant_pe: Signal<Out, Bits<3>>,
    pub grant_start: Signal<Out, Bits<48>>,
    pub grant_finish: Signal<Out, Bits<48>>,
    pub reject_valid: Signal<Out, Bit>,
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
        // Efficient-first: the latest-starting feasible element wins; scanning up from index 0 with
        // a strict comparison breaks ties to the lowest index.
        self.found.next = false;
        self.best.next = 0.into();
        self.best_start.next = 0.into();
        self.best_finish.next = 0.into();
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
            }
            self.start[i].next = self.cycle.q.val();
            if self.busy[i].q.val() > self.cycle.q.val() {
                self.start[i].next = self.busy[i].q.val();
            }
            self.finish[i].next = self.start[i].val() + self.head_est.val();
            if self.pe_enabled[i].q.val()
                & (self.pe_kernel[i].q.val() == self.head_kernel.val())
                & (self.finish[i].val() <= self.head_deadline.val())
                & (!self.found.val() | (self.start[i].val() > self.best_start.val()))
            {
                self.found.next = true;
                self.best.next = i.to_bits();
                self.best_start.next = self.start[i].val();
                self.best_finish.next = self.finish[i].val();
            }
        }
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
