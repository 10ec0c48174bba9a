//! Standard workloads for throughput figures: each design streams a fixed, seeded batch of real
//! inputs and reports items against the clock cycles the RTL took (load phases excluded).

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;
use spork_golden::dispatch::{Config, Descriptor, Inputs};
use spork_golden::inputs;

use crate::cores::{Bloom, Dense, Sobel};
use crate::{Model, SimError};

/// Items streamed and the cycles they took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throughput {
    pub items: u64,
    /// What an item is ("pixel", "term", "input element", "request").
    pub item: &'static str,
    pub cycles: u64,
}

impl Throughput {
    pub fn items_per_cycle(&self) -> f64 {
        self.items as f64 / self.cycles.max(1) as f64
    }
}

/// The dispatch engine's decision latency: cycles from the cycle a descriptor is pushed in (on an idle
/// engine) to the cycle its decision is on the ports. [`Dispatch::cycle`](crate::dispatch::Dispatch::cycle)
/// shows a cycle's outputs before its edge, so the push's own call shows cycle 0.
pub fn decision_latency(model: &Model) -> Result<u64, SimError> {
    let mut d = crate::dispatch::Dispatch::new(model)?;
    let configure = Some(Config { pe: 0, kernel: 0, enabled: true, busy_until: 0 });
    d.cycle(&Inputs { configure, ..Inputs::default() });
    let push = Some(Descriptor { id: 1, kernel: 0, est: 10, deadline: u64::MAX >> 16 });
    let mut out = d.cycle(&Inputs { push, ..Inputs::default() });
    let mut cycles = 0;
    while out.decision.is_none() && cycles < 64 {
        out = d.cycle(&Inputs::default());
        cycles += 1;
    }
    if out.decision.is_none() {
        return Err(SimError::Stalled { model: model.name().into(), got: 0, expected: 1, cycles });
    }
    Ok(cycles)
}

/// Runs design `model`'s standard workload (`scale` 1 is about 10^4..10^5 cycles).
pub fn standard_workload(model: &Model, scale: u32) -> Result<Throughput, SimError> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let scale = scale.max(1) as usize;
    match model.name() {
        "sobel" => {
            let mut k = Sobel::new(model)?;
            let (w, h) = (128, 32 * scale);
            let img = inputs::image(&mut rng, w, h);
            let run = k.run(&img, w)?;
            Ok(Throughput { items: img.len() as u64, item: "pixel", cycles: run.cycles })
        }
        "sobel8" => {
            // Camera-frame rows (1920 wide, a multiple of eight) and a ragged width.
            let mut k = crate::sobel8::Sobel8::new(model)?;
            let (mut items, mut cycles) = (0, 0);
            for (w, h) in [(1920, 8 * scale), (1021, 8 * scale)] {
                let img = inputs::image(&mut rng, w, h);
                cycles += k.run(&img, w)?.cycles;
                items += img.len() as u64;
            }
            Ok(Throughput { items, item: "pixel", cycles })
        }
        "bloom" => {
            let mut k = Bloom::new(model)?;
            let (profile, interests) = inputs::profile(&mut rng, 100);
            k.load_profile(&profile);
            let docs: Vec<Vec<u32>> =
                (0..64 * scale).map(|_| inputs::document(&mut rng, &interests, 64)).collect();
            let run = k.score(&docs)?;
            Ok(Throughput {
                items: docs.iter().map(|d| d.len() as u64).sum(),
                item: "term",
                cycles: run.cycles,
            })
        }
        "bloom8" => {
            // The same workload as `bloom`: 64-term documents fill eight beats each.
            let mut k = crate::bloom8::Bloom8::new(model)?;
            let (profile, interests) = inputs::profile(&mut rng, 100);
            k.load_profile(&profile);
            let docs: Vec<Vec<u32>> =
                (0..64 * scale).map(|_| inputs::document(&mut rng, &interests, 64)).collect();
            let run = k.score(&docs)?;
            Ok(Throughput {
                items: docs.iter().map(|d| d.len() as u64).sum(),
                item: "term",
                cycles: run.cycles,
            })
        }
        "dense" => {
            let mut k = Dense::new(model)?;
            k.load(&inputs::layer(&mut rng));
            let xs: Vec<Vec<i16>> = (0..64 * scale).map(|_| inputs::vector(&mut rng, 64)).collect();
            let run = k.forward(&xs)?;
            Ok(Throughput {
                items: xs.iter().map(|x| x.len() as u64).sum(),
                item: "input element",
                cycles: run.cycles,
            })
        }
        "dense32" => {
            // The same workload as `dense`: 64-element vectors, two full beats each.
            let mut k = crate::dense32::Dense32::new(model)?;
            k.load(&inputs::layer(&mut rng));
            let xs: Vec<Vec<i16>> = (0..64 * scale).map(|_| inputs::vector(&mut rng, 64)).collect();
            let run = k.forward(&xs)?;
            Ok(Throughput {
                items: xs.iter().map(|x| x.len() as u64).sum(),
                item: "input element",
                cycles: run.cycles,
            })
        }
        "dispatch" => {
            let mut d = crate::dispatch::Dispatch::new(model)?;
            for pe in 0..8 {
                let configure = Some(Config { pe, kernel: pe % 3, enabled: true, busy_until: 0 });
                d.cycle(&Inputs { configure, ..Inputs::default() });
            }
            let n = 4096 * scale as u64;
            let (mut pushed, mut decided, mut cycles) = (0u64, 0u64, 0u64);
            while decided < n {
                let mut i = Inputs::default();
                if pushed < n {
                    let id = pushed as u16;
                    i.push = Some(Descriptor {
                        id,
                        kernel: (pushed % 3) as u8,
                        est: 50,
                        deadline: u64::MAX >> 16,
                    });
                }
                let out = d.cycle(&i);
                if i.push.is_some() && !out.full {
                    pushed += 1;
                }
                decided += u64::from(out.decision.is_some());
                cycles += 1;
            }
            Ok(Throughput { items: n, item: "request", cycles })
        }
        other => Err(SimError::WrongModel {
            model: model.path().display().to_string(),
            found: other.into(),
            expected: "sobel, sobel8, bloom, bloom8, dense, dense32 or dispatch".into(),
        }),
    }
}
