//! Bit-exact co-simulation: every Verilated kernel against its software reference on at least
//! 10,000 random inputs, and the dispatch engine against its cycle-accurate golden model on 100,000
//! random requests, every port compared on every cycle.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use spork_golden::dispatch::{self, Config, Decision, Descriptor, Engine, Inputs};
use spork_golden::inputs;
use spork_sim::Model;
use spork_sim::cores::{Bloom, Dense, Sobel};

#[test]
fn sobel_matches_the_reference_on_10000_images() {
    let model = Model::load("sobel").expect("model");
    let mut rtl = Sobel::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let mut pixels = 0;
    for n in 0..10_000 {
        // Mostly small images; every 500th is full width (the line buffers' whole depth).
        let (w, h) = if n % 500 == 0 { (256, 5) } else { inputs::image_shape(&mut rng, 24, 8) };
        let img = inputs::image(&mut rng, w, h);
        let want = spork_golden::sobel::sobel(&img, w).expect("shape");
        let got = rtl.run(&img, w).expect("rtl");
        assert_eq!(got.output, want, "image {n} ({w}x{h})");
        pixels += img.len();
    }
    assert!(pixels > 100_000);
}

#[test]
fn sobel8_matches_the_reference_on_3000_images_of_every_row_remainder() {
    let model = Model::load("sobel8").expect("model");
    let mut rtl = spork_sim::sobel8::Sobel8::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    let mut remainders = [0usize; 8];
    for n in 0..3_000 {
        // Mostly small images of every width modulo 8; every 300th spans the line buffers' whole
        // depth (4,096) or a camera row (1,920), or is one pixel short of a beat (4,095).
        let (w, h) = match n % 300 {
            0 => (4096, 4),
            100 => (1920, 5),
            200 => (4095, 3),
            _ => (rng.random_range(3..=70), rng.random_range(3..=8)),
        };
        let img = inputs::image(&mut rng, w, h);
        let want = spork_golden::sobel::sobel_wide(&img, w).expect("shape");
        let got = rtl.run(&img, w).expect("rtl");
        assert_eq!(got.output, want, "image {n} ({w}x{h})");
        remainders[w % 8] += 1;
    }
    assert!(remainders.iter().all(|&r| r > 100), "every row remainder seen: {remainders:?}");
}

#[test]
fn bloom_matches_the_reference_on_10000_documents() {
    let model = Model::load("bloom").expect("model");
    let mut rtl = Bloom::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
    for batch in 0..20 {
        let terms = rng.random_range(1..200);
        let (profile, interests) = inputs::profile(&mut rng, terms);
        rtl.load_profile(&profile);
        let docs: Vec<Vec<u32>> = (0..500)
            .map(|_| {
                let len = rng.random_range(0..40);
                inputs::document(&mut rng, &interests, len)
            })
            .collect();
        let want: Vec<u16> = docs.iter().map(|d| profile.score(d)).collect();
        let got = rtl.score(&docs).expect("rtl");
        assert_eq!(got.output, want, "batch {batch}");
    }
}

#[test]
fn bloom8_matches_the_reference_on_10000_documents_of_every_lane_remainder() {
    let model = Model::load("bloom8").expect("model");
    let mut rtl = spork_sim::bloom8::Bloom8::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for batch in 0..20 {
        let terms = rng.random_range(1..200);
        let (profile, interests) = inputs::profile(&mut rng, terms);
        rtl.load_profile(&profile);
        // Lengths 0..=80: empty documents, every count of lanes in a last beat, and up to ten beats.
        let docs: Vec<Vec<u32>> = (0..500)
            .map(|_| {
                let len = rng.random_range(0..=80);
                inputs::document(&mut rng, &interests, len)
            })
            .collect();
        let want: Vec<u16> = docs.iter().map(|d| profile.score(d)).collect();
        let got = rtl.score(&docs).expect("rtl");
        first_mismatch(&got.output, &want, &docs, batch);
    }
}

#[test]
fn dense_matches_the_reference_on_10000_vectors() {
    let model = Model::load("dense").expect("model");
    let mut rtl = Dense::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for batch in 0..10 {
        let layer = inputs::layer(&mut rng);
        rtl.load(&layer);
        let xs: Vec<Vec<i16>> = (0..1000)
            .map(|_| {
                let len = rng.random_range(1..=64);
                inputs::vector(&mut rng, len)
            })
            .collect();
        let want: Vec<_> = xs.iter().map(|x| layer.forward(x).expect("shape")).collect();
        let got = rtl.forward(&xs).expect("rtl");
        first_mismatch(&got.output, &want, &xs, batch);
    }
}

#[test]
fn dense32_matches_the_reference_on_10000_vectors_of_every_lane_remainder() {
    let model = Model::load("dense32").expect("model");
    let mut rtl = spork_sim::dense32::Dense32::new(&model).expect("ports");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    for batch in 0..10 {
        let layer = inputs::layer(&mut rng);
        rtl.load(&layer);
        let xs: Vec<Vec<i16>> = (0..1000)
            .map(|_| {
                let len = rng.random_range(1..=64);
                inputs::vector(&mut rng, len)
            })
            .collect();
        let want: Vec<[i16; 8]> = xs.iter().map(|x| layer.forward(x).expect("shape")).collect();
        let got = rtl.forward(&xs).expect("rtl");
        first_mismatch(&got.output, &want, &xs, batch);
    }
}

fn first_mismatch<T: PartialEq + std::fmt::Debug, I: std::fmt::Debug>(
    got: &[T],
    want: &[T],
    input: &[I],
    batch: usize,
) {
    assert_eq!(got.len(), want.len(), "batch {batch}: output count");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "batch {batch}, item {i}: rtl {:?} != reference {:?} for input {:?}",
            got[i], want[i], input[i]
        );
    }
}

#[test]
fn dispatch_engine_matches_its_golden_model_on_100000_requests() {
    let model = Model::load("dispatch").expect("model");
    let mut rtl = spork_sim::dispatch::Dispatch::new(&model).expect("ports");
    let mut golden = Engine::new();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let (mut pushed, mut grants, mut rejects, mut cycle, mut full_cycles) = (0u32, 0u32, 0u32, 0u64, 0u64);
    while pushed < 100_000 || cycle < 100 {
        // Hold the queue in bursts so it fills and `full` back-pressure is exercised.
        let mut inputs = Inputs { hold: (cycle / 64) % 5 == 4, ..Inputs::default() };
        // Now and then reconfigure an element (a kernel swap, taking it out of service, the host's
        // booking written over the engine's: behind or ahead of its clock).
        if cycle.is_multiple_of(5000) || rng.random_range(0..400) == 0 {
            inputs.configure = Some(Config {
                pe: rng.random_range(0..8),
                kernel: rng.random_range(0..3),
                enabled: cycle < 100 || rng.random_range(0..4) != 0,
                busy_until: golden.now().saturating_sub(100) + rng.random_range(0..600),
            });
        } else if pushed < 100_000 && rng.random_range(0..10) < 7 {
            let est = rng.random_range(1..200);
            let slack = rng.random_range(0..400);
            let now = golden.now();
            inputs.push = Some(Descriptor {
                id: pushed as u16,
                kernel: rng.random_range(0..3),
                est,
                deadline: now + u64::from(est) + slack,
            });
        }
        let want = golden.cycle(&inputs);
        let got = rtl.cycle(&inputs);
        assert_eq!(got, want, "cycle {cycle}");
        full_cycles += u64::from(want.full);
        if inputs.push.is_some() && !want.full {
            pushed += 1;
        }
        match want.decision {
            Some(Decision::Grant { .. }) => grants += 1,
            Some(Decision::Reject { .. }) => rejects += 1,
            None => {}
        }
        cycle += 1;
    }
    // Drain.
    for _ in 0..(dispatch::QUEUE_DEPTH as u64 + 4) {
        let want = golden.cycle(&Inputs::default());
        assert_eq!(rtl.cycle(&Inputs::default()), want);
        match want.decision {
            Some(Decision::Grant { .. }) => grants += 1,
            Some(Decision::Reject { .. }) => rejects += 1,
            None => {}
        }
    }
    assert_eq!(grants + rejects, pushed, "every request answered once");
    assert!(full_cycles > 1000, "the queue filled: {full_cycles} cycles full");
    assert!(grants > 10_000 && rejects > 10_000, "both paths exercised: {grants} grants, {rejects} rejects");
}
