//! 3x3 Sobel gradient magnitude over 8-bit grayscale, as the streaming RTL computes it.
//!
//! The magnitude is |Gx| + |Gy| (the L1 norm hardware uses instead of a square root) saturated to
//! 255. Only interior pixels have a full window, so an image of `w x h` gives `(w-2) x (h-2)` outputs
//! in raster order: exactly the pixels the RTL marks valid.

use crate::ShapeError;

/// The line buffers hold this many pixels: the widest image the RTL accepts.
pub const MAX_WIDTH: usize = 256;

/// The widest image the eight-pixel RTL (`sobel8`) accepts: 512 line-buffer words of eight pixels.
pub const MAX_WIDE_WIDTH: usize = 4096;

/// The magnitude of one 3x3 window, `win[row][col]`.
pub fn magnitude(win: [[u8; 3]; 3]) -> u8 {
    let p = |r: usize, c: usize| i32::from(win[r][c]);
    let gx = (p(0, 2) + 2 * p(1, 2) + p(2, 2)) - (p(0, 0) + 2 * p(1, 0) + p(2, 0));
    let gy = (p(2, 0) + 2 * p(2, 1) + p(2, 2)) - (p(0, 0) + 2 * p(0, 1) + p(0, 2));
    (gx.abs() + gy.abs()).min(255) as u8
}

/// Checks that `len` pixels form an image of rows of `width` the RTL can take.
pub fn check_shape(len: usize, width: usize) -> Result<usize, ShapeError> {
    check_shape_up_to(len, width, MAX_WIDTH)
}

/// [`check_shape`] for the eight-pixel RTL's widths, up to [`MAX_WIDE_WIDTH`]: the rows.
pub fn sobel_wide_shape(len: usize, width: usize) -> Result<usize, ShapeError> {
    check_shape_up_to(len, width, MAX_WIDE_WIDTH)
}

fn check_shape_up_to(len: usize, width: usize, max: usize) -> Result<usize, ShapeError> {
    if !(3..=max).contains(&width) {
        return Err(ShapeError::Width { width, max });
    }
    if !len.is_multiple_of(width) || len / width < 3 {
        return Err(ShapeError::Rows { len, width });
    }
    Ok(len / width)
}

/// The interior gradient magnitudes of a `width`-wide image, in raster order.
pub fn sobel(pixels: &[u8], width: usize) -> Result<Vec<u8>, ShapeError> {
    let height = check_shape(pixels.len(), width)?;
    Ok(interior(pixels, width, height))
}

/// [`sobel`] for the eight-pixel RTL's widths, up to [`MAX_WIDE_WIDTH`].
pub fn sobel_wide(pixels: &[u8], width: usize) -> Result<Vec<u8>, ShapeError> {
    let height = sobel_wide_shape(pixels.len(), width)?;
    Ok(interior(pixels, width, height))
}

fn interior(pixels: &[u8], width: usize, height: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity((width - 2) * (height - 2));
    for r in 1..height - 1 {
        for c in 1..width - 1 {
            let mut win = [[0u8; 3]; 3];
            for (dr, row) in win.iter_mut().enumerate() {
                for (dc, px) in row.iter_mut().enumerate() {
                    *px = pixels[(r + dr - 1) * width + c + dc - 1];
                }
            }
            out.push(magnitude(win));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_image_has_no_gradient() {
        assert_eq!(sobel(&[7; 20], 5).unwrap(), vec![0; 6]);
    }

    #[test]
    fn vertical_edge_saturates() {
        // Columns 0..2 dark, 2.. bright: Gx = 4 * 200 at the edge, clamped to 255.
        let img: Vec<u8> = (0..16).map(|i| if i % 4 >= 2 { 200 } else { 0 }).collect();
        assert_eq!(sobel(&img, 4).unwrap(), vec![255, 255, 255, 255]);
    }

    #[test]
    fn small_gradient_is_exact() {
        // A horizontal ramp of 1 per column: Gx = 1+2+1 + ... = 8, Gy = 0.
        let img: Vec<u8> = (0..9).map(|i| (i % 3) as u8 * 2).collect();
        assert_eq!(sobel(&img, 3).unwrap(), vec![16]);
    }

    #[test]
    fn rejects_bad_shapes() {
        assert_eq!(sobel(&[0; 10], 2), Err(ShapeError::Width { width: 2, max: MAX_WIDTH }));
        assert_eq!(sobel(&[0; 10], 5), Err(ShapeError::Rows { len: 10, width: 5 }));
        assert_eq!(sobel(&[0; 16], 5), Err(ShapeError::Rows { len: 16, width: 5 }));
    }
}
