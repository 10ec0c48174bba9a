//! The engine: the one timed state machine every driver runs.
//!
//! It owns the pool, the scheduler's policy objects, the worker timers and the interval-tick
//! schedule, applies the rules of [`crate::policy`] and reports each effect (a worker to start or
//! stop, a request booked) to the driver's [`Effects`] sink as it happens. It keeps no clock: a driver
//! tells it the time. The evaluator (`spork_lab::evaluate`) drives it in virtual time through
//! [`replay`]; the live pools (`spork_live::live`) in wall time, calling
//!
//! - [`Engine::begin`] once, [`Engine::advance`] as time passes (interval ticks, worker timers and
//!   brownout periods due by then, in time order; [`Engine::next_event`] says when to wake),
//! - [`Engine::arrive`] per request, [`Engine::fail_worker`] / [`Engine::redispatch_on_cpu`] on
//!   faults, [`Engine::observe_service`] with measured service times,
//! - [`Engine::end_of_trace`], then `advance(Time::MAX, ..)` so the pool drains on its timers (every
//!   worker's life settled in the ledgers), then [`Engine::finish`] for the [`Outcome`].
//!
//! A worker's queue is FIFO with known service times, so a request's completion is fixed when it is
//! booked, and a worker's only completion event is its queue draining, which starts its idle timer.
//! Energy and cost are settled per worker when it is released (see [`crate::model::ledger`]). At the
//! end of the trace the FPGA target drops to zero and the pool drains through the normal idle rule,
//! so every worker's whole life is accounted.

pub mod boards;
mod brownout;
mod core;
mod effects;
mod finishes;
pub mod hardware;
mod outcome;
mod plan;
mod replay;
pub mod sizes;
mod timers;

pub use brownout::PoolBrownout;
pub use core::Engine;
pub use effects::{Action, Arrival, Assignment, Effects};
pub use outcome::{Outcome, Tally};
pub use plan::{Oracle, Plan};
pub use replay::{
    Hint, Searched, replay, replay_shared, search_by_doubling, search_headroom, search_headroom_near, told,
    told_near,
};

#[cfg(test)]
mod batching_tests;
#[cfg(test)]
mod tests;
