//! The host's efficient-first dispatcher and the RTL's golden rule (`spork_golden::dispatch::select`)
//! are one rule: on random pools of FPGAs they agree on whether a request can be placed in time and on
//! when it starts and finishes. They may pick different elements only among equals (the same start):
//! the host prefers the worker idle the shortest (then the higher slot), the RTL the lowest index.
//! With several compute units per board the engine's elements are the CUs, so the same holds with
//! the pool's CUs in place of its boards.

use proptest::prelude::*;
use spork::model::{Kind, Pool, Time, Unit};
use spork::policy::dispatch::EfficientFirst;
use spork::policy::{Dispatcher, Fleet, Job, Placement};
use spork_golden::dispatch::{Descriptor, Element, select};

/// A pool of warm FPGAs of `cus` compute units each whose CU queues drain at `busy` (relative to
/// time 0), CU by CU.
fn pool(busy: &[Time], cus: u16) -> Pool {
    let mut p = Pool::new().with_compute_units(Kind::Fpga, cus);
    for board in busy.chunks(usize::from(cus)) {
        let id = p.prewarm(Kind::Fpga, 0, 1);
        for (cu, &b) in board.iter().enumerate().filter(|&(_, &b)| b > 0) {
            p.assign(Unit { worker: id, cu: cu as u16 }, 0, b);
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn host_and_golden_efficient_first_agree(
        busy in prop::collection::vec(0u64..2_000, 1..8),
        now in 0u64..1_000,
        est in 1u32..500,
        slack in 0u64..2_500,
        cus in 1u16..4,
    ) {
        // Whole boards: a board's CUs beyond `busy` are idle (busy until 0).
        let mut busy = busy;
        busy.resize(busy.len().div_ceil(usize::from(cus)) * usize::from(cus), 0);
        let pool = pool(&busy, cus);
        let deadline = now + slack;
        let mut host = Dispatcher::EfficientFirst(EfficientFirst::new(Fleet::FPGA_ONLY, Time::MAX));
        let job = Job { deadline, service: [Time::from(est) * 2, Time::from(est)] };
        let placed = host.place(&pool, &job, now);
        let elements: Vec<Element> =
            busy.iter().map(|&b| Element { enabled: true, kernel: 0, busy_until: b }).collect();
        let d = Descriptor { id: 0, kernel: 0, est, deadline };
        let golden = select(now, &elements, &d);
        // The host's answer as (start, finish) when it placed the request in time.
        let host_start = match placed {
            Placement::Assign(w) => {
                let start = pool.start_at(w, now);
                (start + Time::from(est) <= deadline).then_some(start)
            }
            Placement::SpinUp(_) => None,
        };
        match (host_start, golden) {
            (None, None) => {}
            (Some(s), Some((_, gs, gf))) => {
                prop_assert_eq!(s, gs, "same start");
                prop_assert_eq!(s + Time::from(est), gf, "same finish");
            }
            (h, g) => prop_assert!(false, "host {:?} vs golden {:?} on {:?} at {}", h, g, busy, now),
        }
    }
}
