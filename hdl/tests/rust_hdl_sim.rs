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
use spork_hdl::kernels::{Bloom, Bloom8, Dense, Dense32, Sobel, Sobel8};

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

/// One image's beats for the eight-pixel Sobel: each row cut into beats of eight pixels (lane k in
/// bits 8k+7:8k), a row's last beat holding what is left.
fn row_beats(img: &[u8], w: usize) -> Vec<u64> {
    img.chunks(w)
        .flat_map(|row| {
            row.chunks(8).map(|b| b.iter().enumerate().fold(0u64, |v, (k, &p)| v | u64::from(p) << (8 * k)))
        })
        .collect()
}

#[test]
fn sobel8_agrees_with_the_reference_at_every_row_remainder() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(13);
    // Widths 3..=40 cover every remainder modulo 8 several times; the widest row the line buffers
    // hold closes the set.
    let mut images: Vec<(Vec<u8>, usize)> = (0..60)
        .map(|_| {
            let (w, h) = (rng.random_range(3..=40), rng.random_range(3..=6));
            (inputs::image(&mut rng, w, h), w)
        })
        .collect();
    images.push((inputs::image(&mut rng, 4096, 3), 4096));
    images.push((inputs::image(&mut rng, 4093, 4), 4093));
    let cycles: u64 = images.iter().map(|(i, w)| (i.len() / w * (w.div_ceil(8) + 1)) as u64 * 2 + 16).sum();
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink) = (images.clone(), got.clone());
    let mut sim = simple_sim!(Sobel8, clock, HZ, ep, {
        let mut x = ep.init()?;
        let mut gap = 0u64;
        for (img, w) in &feed {
            let beats = row_beats(img, *w);
            let (mut out, mut lasts) = (Vec::new(), 0usize);
            x.width.next = (*w as u64).to_bits();
            let mut i = 0;
            while i < beats.len() + 8 {
                // Every seventh cycle idle: the kernel must hold its counters through gaps.
                gap += 1;
                let offer = i < beats.len() && !gap.is_multiple_of(7);
                let taken = offer && x.in_ready.val();
                x.in_valid.next = offer;
                x.in_first.next = i == 0;
                x.in_last.next = i + 1 == beats.len();
                x.in_pixels.next = beats.get(i).copied().unwrap_or(0).to_bits();
                wait_clock_cycle!(ep, clock, x);
                if x.out_valid.val() {
                    let (m, n) = (x.out_mags.val().to_u64(), x.out_count.val().to_u64());
                    out.extend((0..n).map(|k| (m >> (8 * k)) as u8));
                    lasts += usize::from(x.out_last.val());
                }
                if taken || i >= beats.len() {
                    i += 1;
                }
            }
            x.in_valid.next = false;
            sink.lock().expect("lock").push((out, lasts));
        }
        ep.done(x)
    });
    run(cycles, &mut sim);
    let got = got.lock().expect("lock");
    assert_eq!(got.len(), images.len());
    for (n, ((img, w), (out, lasts))) in images.iter().zip(got.iter()).enumerate() {
        let want = spork_golden::sobel::sobel_wide(img, *w).expect("shape");
        assert_eq!(out.len(), want.len(), "image {n}: width {w}");
        assert_eq!(out, &want, "image {n}: width {w}");
        assert_eq!(*lasts, 1, "image {n}: out_last on exactly its last beat");
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

/// A document's beats for `Bloom8`: eight terms a beat, the last beat's TKEEP marking its lanes,
/// unused lanes filled with terms that match (the kernel must not count them).
fn document_beats(doc: &[u32], filler: u32) -> Vec<(Bits<256>, u64)> {
    doc.chunks(8)
        .map(|terms| {
            let mut v: Bits<256> = 0.into();
            for k in 0..8 {
                v.set_bits::<32>(32 * k, u64::from(terms.get(k).copied().unwrap_or(filler)).to_bits());
            }
            (v, (1u64 << terms.len()) - 1)
        })
        .collect()
}

#[test]
fn bloom8_agrees_with_the_reference_at_every_lane_remainder() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(14);
    let (profile, interests) = inputs::profile(&mut rng, 60);
    // Lengths 1..=40 end in every lane count several times.
    let docs: Vec<Vec<u32>> = (0..300)
        .map(|_| {
            let len = rng.random_range(1..=40);
            inputs::document(&mut rng, &interests, len)
        })
        .collect();
    let want: Vec<u16> = docs.iter().map(|d| profile.score(d)).collect();
    let beats: u64 = docs.iter().map(|d| d.len().div_ceil(8) as u64).sum();
    let cycles = 1024 + beats * 2 + 8;
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink, bits, filler) = (docs.clone(), got.clone(), profile.clone(), interests[0]);
    let mut sim = simple_sim!(Bloom8, clock, HZ, ep, {
        let mut x = ep.init()?;
        for b in 0..spork_golden::bloom::PROFILE_BITS {
            x.load_we.next = true;
            x.load_addr.next = (b as u64).to_bits();
            x.load_bit.next = bits.bit(b);
            wait_clock_cycle!(ep, clock, x);
        }
        x.load_we.next = false;
        let mut gap = 0u64;
        let take = |x: &Bloom8| {
            if x.out_valid.val() {
                sink.lock().expect("lock").push(x.out_score.val().to_u64() as u16);
            }
        };
        for doc in &feed {
            let beats = document_beats(doc, filler);
            for (i, (v, keep)) in beats.iter().enumerate() {
                // Every fifth cycle idle: the running score must hold through gaps.
                gap += 1;
                if gap.is_multiple_of(5) {
                    x.in_valid.next = false;
                    wait_clock_cycle!(ep, clock, x);
                    take(&x);
                }
                x.in_valid.next = true;
                x.in_last.next = i + 1 == beats.len();
                x.in_keep.next = keep.to_bits();
                x.in_hashes.next = *v;
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

/// A vector's beats for `Dense32`: 32 elements a beat, TKEEP marking the last beat's lanes, unused
/// lanes filled with `filler` (the kernel must add nothing for them).
fn vector_beats(v: &[i16], filler: i16) -> Vec<(Bits<512>, u64)> {
    v.chunks(32)
        .map(|xs| {
            let mut b: Bits<512> = 0.into();
            for k in 0..32 {
                b.set_bits::<16>(16 * k, u64::from(xs.get(k).copied().unwrap_or(filler) as u16).to_bits());
            }
            (b, (1u64 << xs.len()) - 1)
        })
        .collect()
}

#[test]
fn dense32_agrees_with_the_reference_at_every_lane_remainder() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
    let layer = inputs::layer(&mut rng);
    // Lengths 1..=64: one or two beats, the last holding any count of lanes; the full 64 most.
    let mut xs: Vec<Vec<i16>> = (0..40)
        .map(|_| {
            let len = rng.random_range(1..=64);
            inputs::vector(&mut rng, len)
        })
        .collect();
    xs.extend((0..20).map(|_| inputs::vector(&mut rng, 64)));
    let want: Vec<[i16; 8]> = xs.iter().map(|x| layer.forward(x).expect("shape")).collect();
    let beats: u64 = xs.iter().map(|x| x.len().div_ceil(32) as u64).sum();
    let cycles = 512 + beats * 2 + 8;
    let got = Arc::new(Mutex::new(Vec::new()));
    let (feed, sink, weights) = (xs.clone(), got.clone(), layer.clone());
    let mut sim = simple_sim!(Dense32, clock, HZ, ep, {
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
        let take = |x: &Dense32| {
            if x.out_valid.val() {
                let y: [i16; 8] = std::array::from_fn(|j| x.out_y[j].val().to_u64() as u16 as i16);
                sink.lock().expect("lock").push(y);
            }
        };
        let mut gap = 0u64;
        for v in &feed {
            let beats = vector_beats(v, i16::MAX);
            for (i, (b, keep)) in beats.iter().enumerate() {
                // Every third cycle idle: the beat count and sums must hold through gaps.
                gap += 1;
                if gap.is_multiple_of(3) {
                    x.in_valid.next = false;
                    wait_clock_cycle!(ep, clock, x);
                    take(&x);
                }
                x.in_valid.next = true;
                x.in_last.next = i + 1 == beats.len();
                x.in_keep.next = keep.to_bits();
                x.in_x.next = *b;
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
