//! Unloading: a dropped model leaves the process (its own test binary, so no other test holds it).

use spork_sim::Model;

fn mapped(name: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps").expect("procfs").contains(&format!("libspork_model_{name}.so"))
}

#[test]
fn a_model_is_unmapped_when_dropped_and_loads_again() {
    assert!(!mapped("bloom"));
    let m = Model::load("bloom").expect("load");
    let inst = m.instantiate("clock").expect("instance");
    assert!(mapped("bloom"));
    drop(inst);
    drop(m);
    assert!(!mapped("bloom"), "dlclose must unmap the model (built with -fno-gnu-unique)");
    let again = Model::load("bloom").expect("reload");
    assert!(again.load_time().as_secs_f64() > 0.0);
    assert!(mapped("bloom"));
}
