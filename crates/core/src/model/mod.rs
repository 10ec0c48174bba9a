//! What Spork reasons about: time, requests, worker specs, the worker pool and its accounting.

pub mod ledger;
pub mod link;
pub mod ordered;
pub mod per_kind;
pub mod platform;
pub mod pool;
pub mod power;
pub mod request;
pub mod time;
pub mod units;

pub use ledger::{EnergySplit, Ledger};
pub use link::Link;
pub use per_kind::PerKind;
pub use platform::{Kind, Platform, WorkerSpec};
pub use pool::{Pool, WorkerId, WorkerState};
pub use power::Power;
pub use request::Request;
pub use time::Time;
pub use units::Unit;
