//! Pure scheduling policy: no I/O, no clock, no threads.
//!
//! Every rule of a scheduler lives here. Policies read a view of the pool and telemetry and return
//! decisions; the engine ([`crate::engine`]) applies them, and its drivers (the evaluator in virtual
//! time, the live runtime in wall time) only carry out the effects.
//!
//! - [`allocator`]: how many FPGAs to hold per interval (Algorithms 1 and 2, the baselines);
//! - [`dispatch`]: where each request runs (Algorithm 3, round robin, index packing, the rescue path);
//! - [`estimate`]: a served request's CPU time, estimated online from its input;
//! - [`fleet`]: how the pool's FPGAs follow the target (which to release, drain or take back);
//! - [`admission`]: whether a request that would queue into a miss is placed or rejected;
//! - [`arbitrate`]: scarce boards shared by several pools, granted by expected saving;
//! - [`batching`]: dynamic batching, deadline-aware (when a batch closes, who leaves it);
//! - [`caps`]: caps on the pool and where requests go when a cap refuses a spin-up;
//! - [`release`]: when an idle worker may spin down;
//! - [`brownout`]: the optional-part gate, its queue length and the controllers;
//! - [`speed`]: the FPGA speedup a live pool observes from its answers, kept current;
//! - [`scheduler`]: the paper's named schedulers as compositions of the above.

pub mod admission;
pub mod allocator;
pub mod arbitrate;
pub mod batching;
pub mod brownout;
pub mod call_cost;
pub mod caps;
pub mod dispatch;
pub mod estimate;
pub mod fleet;
pub mod objective;
pub mod placement;
pub mod recovery;
pub mod release;
pub mod scheduler;
pub mod speed;

pub use allocator::{Allocator, Demand, IntervalStats};

/// The choice among `all` whose `name` is `s` (ignoring case and surrounding space): how the policy's
/// named sets (dispatchers, brownout controllers) parse.
pub(crate) fn by_name<T: Copy>(all: &[T], name: fn(T) -> &'static str, s: &str) -> Option<T> {
    all.iter().copied().find(|&t| name(t).eq_ignore_ascii_case(s.trim()))
}
pub use admission::Admission;
pub use caps::Caps;
pub use dispatch::{Dispatcher, DispatcherKind, Fleet, Job, Placement};
pub use objective::Objective;
pub use scheduler::Scheduler;
