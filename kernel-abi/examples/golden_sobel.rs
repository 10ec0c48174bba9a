//! The built-in Sobel kernel (spork-golden's reference) exported through the C ABI with
//! `export_kernel!`: what `host/benches/kernel_abi.rs` loads to measure the ABI's overhead against
//! calling the same code directly. Build: `cargo build --release -p spork-kernel --example golden_sobel`.

use spork_kernel::{Inputs, Outputs};

/// `image` UINT8 [H, W] -> `magnitudes` UINT8 [H-2, W-2].
fn sobel(inputs: &Inputs, outputs: &mut Outputs) -> Result<(), String> {
    let pixels = inputs.get::<u8>(0)?;
    let width = inputs.shape(0).get(1).copied().unwrap_or(0) as usize;
    let magnitudes = spork_golden::sobel::sobel(pixels, width).map_err(|e| e.to_string())?;
    let out = outputs.get_mut::<u8>(0)?;
    if out.len() != magnitudes.len() {
        return Err(format!(
            "the output holds {} magnitudes, the image gives {}",
            out.len(),
            magnitudes.len()
        ));
    }
    out.copy_from_slice(&magnitudes);
    Ok(())
}

spork_kernel::export_kernel!("golden_sobel", sobel);
