//! Pure scheduling policy: no I/O, no clock, no threads.
//!
//! Policies read a view of the pool and telemetry and return decisions; the evaluator (virtual time)
//! and the live runtime (wall time) drive the very same objects.

pub mod allocator;
pub mod brownout;
pub mod dispatch;
pub mod objective;
pub mod release;
pub mod scheduler;

pub use allocator::{Allocator, Demand, IntervalStats};
pub use dispatch::{Dispatcher, DispatcherKind, Fleet, Job, Placement};
pub use objective::Objective;
pub use scheduler::Scheduler;
