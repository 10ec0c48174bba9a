//! The RTL under rust-hdl's own simulator agrees bit-exactly with the software references (and so
//! with the Verilated models, which `spork-sim`'s tests hold to the same references on many more
//! vectors: rust-hdl simulates about 10k cycles/s, so these use fewer).

use std::sync::{Arc, Mutex};

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rust_hdl::prelude::*;
use spork_golden::dispatch::{Config, Decision, Descriptor, Engine, Inputs, Outputs};
use spork_golden::inputs;
use spork_hdl::dispatch::Dispatch;
use spork_hdl::kernels::{Bloom, Dense, Sobel};

const HZ: u64 = 100_000_000;
/// Simulated picoseconds per clock period at `HZ`.
const PERIOD: u64 = 1_000_000_000_000 / HZ;

fn run<T: Block + Default + Send + 'static>(cycles: u64, sim: &mut Simulation<T>) {
    let mut uut = T::default();
    uut.connect_all();
    sim.run(Box::new(uut), (cycles + 100) * PERIOD).expect("rust-hdl simulation");
}

#[test]
fn sobel_agrees_with_the_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let mut images: Vec<(Vec<u8>, usize)> = (0..150)
        .map(|_| {
            let (w, h) = inputs::image_shape(&mut rng, 12, 6);
            (inputs::image(&mut rng, w, h), w)
        })
        .collect();
    images.push((inputs::image(&mut rng, 256, 3), 256));
    let cycles: u64 = images.iter().map(|(i, _)| i.len() as u64 + 8).sum();
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink) = (images.clone(), got.clone());
    let mut sim = simple_sim!(Sobel, clock, HZ, ep, {
        let mut x = ep.init()?;
        for (img, w) in &feed {
            let mut out = Vec::new();
            x.width.next = (*w as u64).to_bits();
            for (i, &p) in img.iter().enumerate() {
                x.in_valid.next = true;
                x.in_first.next = i == 0;
                x.in_pixel.next = u64::from(p).to_bits();
                wait_clock_cycle!(ep, clock, x);
                if x.out_valid.val() {
                    out.push(x.out_mag.val().to_u64() as u8);
                }
            }
            x.in_valid.next = false;
            x.in_first.next = false;
            for _ in 0..8 {
                wait_clock_cycle!(ep, clock, x);
                if x.out_valid.val() {
                    out.push(x.out_mag.val().to_u64() as u8);
                }
            }
            sink.lock().expect("lock").push(out);
        }
        ep.done(x)
    });
    run(cycles, &mut sim);
    let got = got.lock().expect("lock");
    assert_eq!(got.len(), images.len());
    for (n, ((img, w), out)) in images.iter().zip(got.iter()).enumerate() {
        assert_eq!(out, &spork_golden::sobel::sobel(img, *w).expect("shape"), "image {n}");
    }
}

#[test]
fn bloom_agrees_with_the_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(12);
    let (profile, interests) = inputs::profile(&mut rng, 60);
    let docs: Vec<Vec<u32>> = (0..600)
        .map(|_| {
            let len = rng.random_range(1..24);
            inputs::document(&mut rng, &interests, len)
        })
        .collect();
    let want: Vec<u16> = docs.iter().map(|d| profile.score(d)).collect();
    let cycles = 1024 + docs.iter().map(|d| d.len() as u64).sum::<u64>() + 8;
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink, bits) = (docs.clone(), got.clone(), profile.clone());
    let mut sim = simple_sim!(Bloom, clock, HZ, ep, {
        let mut x = ep.init()?;
        for b in 0..spork_golden::bloom::PROFILE_BITS {
            x.load_we.next = true;
            x.load_addr.next = (b as u64).to_bits();
            x.load_bit.next = bits.bit(b);
            wait_clock_cycle!(ep, clock, x);
        }
        x.load_we.next = false;
        for doc in &feed {
            for (i, &t) in doc.iter().enumerate() {
                x.in_valid.next = true;
                x.in_last.next = i + 1 == doc.len();
                x.in_hash.next = u64::from(t).to_bits();
                wait_clock_cycle!(ep, clock, x);
                if x.out_valid.val() {
                    sink.lock().expect("lock").push(x.out_score.val().to_u64() as u16);
                }
            }
        }
        x.in_valid.next = false;
        for _ in 0..8 {
            wait_clock_cycle!(ep, clock, x);
            if x.out_valid.val() {
                sink.lock().expect("lock").push(x.out_score.val().to_u64() as u16);
            }
        }
        ep.done(x)
    });
    run(cycles, &mut sim);
    assert_eq!(*got.lock().expect("lock"), want);
}

#[test]
fn dense_agrees_with_the_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(13);
    let layer = inputs::layer(&mut rng);
    let xs: Vec<Vec<i16>> = (0..250)
        .map(|_| {
            let len = rng.random_range(1..=64);
            inputs::vector(&mut rng, len)
        })
        .collect();
    let want: Vec<[i16; 8]> = xs.iter().map(|x| layer.forward(x).expect("shape")).collect();
    let cycles = 512 + xs.iter().map(|x| x.len() as u64).sum::<u64>() + 8;
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink, weights) = (xs.clone(), got.clone(), layer.clone());
    let mut sim = simple_sim!(Dense, clock, HZ, ep, {
        let mut x = ep.init()?;
        for (j, row) in weights.weights.iter().enumerate() {
            for (i, &w) in row.iter().enumerate() {
                x.w_we.next = true;
                x.w_neuron.next = (j as u64).to_bits();
                x.w_index.next = (i as u64).to_bits();
                x.w_data.next = w.to_signed_bits();
                wait_clock_cycle!(ep, clock, x);
            }
        }
        x.w_we.next = false;
        let take = |x: &Dense| {
            if x.out_valid.val() {
                let y: [i16; 8] = std::array::from_fn(|j| x.out_y[j].val().to_u64() as u16 as i16);
                sink.lock().expect("lock").push(y);
            }
        };
        for v in &feed {
            for (i, &e) in v.iter().enumerate() {
                x.in_valid.next = true;
                x.in_last.next = i + 1 == v.len();
                x.in_x.next = e.to_signed_bits();
                wait_clock_cycle!(ep, clock, x);
                take(&x);
            }
        }
        x.in_valid.next = false;
        for _ in 0..8 {
            wait_clock_cycle!(ep, clock, x);
            take(&x);
        }
        ep.done(x)
    });
    run(cycles, &mut sim);
    assert_eq!(*got.lock().expect("lock"), want);
}

#[test]
fn dispatch_engine_agrees_with_its_golden_model_cycle_by_cycle() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(14);
    let mut golden = Engine::new();
    let mut script = Vec::new();
    let mut want = Vec::new();
    for c in 0..20_000u64 {
        let mut i = Inputs { hold: (c / 40) % 4 == 3, ..Inputs::default() };
        if c < 8 || rng.random_range(0..200) == 0 {
            // The host's booking: sometimes behind the engine's clock, sometimes ahead of it.
            i.configure = Some(Config {
                pe: (c % 8) as u8,
                kernel: rng.random_range(0..3),
                enabled: rng.random_range(0..5) != 0,
                busy_until: golden.now().saturating_sub(50) + rng.random_range(0..200),
            });
        } else if rng.random_range(0..10) < 7 {
            let est = rng.random_range(1..60);
            let deadline = golden.now() + u64::from(est) + rng.random_range(0..120);
            i.push = Some(Descriptor { id: c as u16, kernel: rng.random_range(0..3), est, deadline });
        }
        want.push(golden.cycle(&i));
        script.push(i);
    }
    assert!(want.iter().any(|o| o.full), "the queue fills");
    assert!(want.iter().any(|o| matches!(o.decision, Some(Decision::Reject { .. }))));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink) = (script.clone(), got.clone());
    let mut sim = simple_sim!(Dispatch, clock, HZ, ep, {
        let mut x = ep.init()?;
        for i in &feed {
            let decision = if x.grant_valid.val() {
                Some(Decision::Grant {
                    id: x.grant_id.val().to_u64() as u16,
                    pe: x.grant_pe.val().to_u64() as u8,
                    start: x.grant_start.val().to_u64(),
                    finish: x.grant_finish.val().to_u64(),
                })
            } else if x.reject_valid.val() {
                Some(Decision::Reject { id: x.reject_id.val().to_u64() as u16 })
            } else {
                None
            };
            sink.lock().expect("lock").push(Outputs {
                now: x.now.val().to_u64(),
                full: x.full.val(),
                decision,
            });
            let c = i.configure.unwrap_or_default();
            x.cfg_we.next = i.configure.is_some();
            x.cfg_pe.next = u64::from(c.pe).to_bits();
            x.cfg_kernel.next = u64::from(c.kernel).to_bits();
            x.cfg_enable.next = c.enabled;
            x.cfg_busy.next = c.busy_until.to_bits();
            x.hold.next = i.hold;
            let d = i.push.unwrap_or(Descriptor { id: 0, kernel: 0, est: 0, deadline: 0 });
            x.push.next = i.push.is_some();
            x.req_id.next = u64::from(d.id).to_bits();
            x.req_kernel.next = u64::from(d.kernel).to_bits();
            x.req_est.next = u64::from(d.est).to_bits();
            x.req_deadline.next = d.deadline.to_bits();
            wait_clock_cycle!(ep, clock, x);
        }
        ep.done(x)
    });
    run(script.len() as u64, &mut sim);
    let got = got.lock().expect("lock");
    assert_eq!(got.len(), want.len());
    if let Some(c) = (0..got.len()).find(|&c| got[c] != want[c]) {
        panic!("cycle {c}: rust-hdl {:?} != golden {:?}", got[c], want[c]);
    }
}
