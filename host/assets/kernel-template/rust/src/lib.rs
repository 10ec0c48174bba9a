//! {{name}}: the CPU implementation in Rust. `cargo build --release` gives
//! `target/release/lib{{name}}.so`; point model.toml's `[cpu]` at it with
//! `library = "rust/target/release/lib{{name}}.so"` (instead of `sources`).

use spork_kernel::{Inputs, Outputs};

/// One request: the inputs and outputs in model.toml's order. The skeleton adds one to each UINT32
/// element of `x`, giving `y`. An `Err` is sent to the client as the request's error.
fn run(inputs: &Inputs, outputs: &mut Outputs) -> Result<(), String> {
    let x = inputs.get::<u32>(0)?; // checked: the type, the alignment, whole elements
    let y = outputs.get_mut::<u32>(0)?;
    if x.len() != y.len() {
        return Err(format!("x has {} elements, y {}", x.len(), y.len()));
    }
    // YOUR LOGIC: replace this loop with your own.
    for (out, v) in y.iter_mut().zip(x) {
        *out = v.wrapping_add(1);
    }
    Ok(())
}

// Exports the four C functions Spork calls.
spork_kernel::export_kernel!("{{name}}", run);
