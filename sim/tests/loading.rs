//! Models are separate artefacts: loaded and unloaded at run time (the simulated board's
//! reconfiguration), with clear errors for missing or foreign files and unknown ports.

use spork_sim::{Model, SimError, built_models_dir, model_path};

#[test]
fn every_model_reports_its_ports() {
    for name in ["sobel", "bloom", "dense", "dispatch"] {
        let m = Model::load(name).expect("load");
        assert_eq!(m.name(), name);
        assert!(m.ports().iter().any(|p| p.name == "clock" && p.input && p.width == 1), "{name}");
        assert!(m.ports().iter().all(|p| p.width <= 64));
    }
}

#[test]
fn clear_errors_for_missing_files_foreign_libraries_and_unknown_ports() {
    let missing = Model::load_path(&built_models_dir().join("libspork_model_nonexistent.so"));
    assert!(matches!(missing, Err(SimError::Missing { .. })));
    let msg = missing.unwrap_err().to_string();
    assert!(msg.contains("SPORK_SIM_MODELS"), "{msg}");

    // The Verilator runtime is a shared library but not a model.
    let foreign = Model::load_path(&built_models_dir().join("libspork_verilated.so"));
    assert!(matches!(foreign, Err(SimError::Symbol { symbol: "spork_model_name", .. })), "{foreign:?}");

    let m = Model::load("sobel").expect("load");
    let err = m.input("no_such_port").unwrap_err().to_string();
    assert!(err.contains("in_pixel") && err.contains("no_such_port"), "{err}");
    assert!(m.output("in_pixel").is_err(), "an input is not an output");
    assert!(model_path("sobel").ends_with("libspork_model_sobel.so"));
}

#[test]
fn instances_are_independent_and_can_run_on_other_threads() {
    let m = Model::load("dense").expect("load");
    let handles: Vec<_> = (0..2)
        .map(|seed| {
            let m = m.clone();
            std::thread::spawn(move || {
                use rand::SeedableRng;
                let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
                let layer = spork_golden::inputs::layer(&mut rng);
                let xs: Vec<Vec<i16>> =
                    (0..200).map(|_| spork_golden::inputs::vector(&mut rng, 64)).collect();
                let mut k = spork_sim::cores::Dense::new(&m).expect("ports");
                k.load(&layer);
                let got = k.forward(&xs).expect("run").output;
                let want: Vec<_> = xs.iter().map(|x| layer.forward(x).expect("shape")).collect();
                got == want
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().expect("thread"));
    }
}
