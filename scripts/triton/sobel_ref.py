"""numpy's Sobel, the reference both sides of the side by side are held to: min(255, |Gx| + |Gy|)
of each interior pixel of a UINT8 [H, W] image (as models/sobel/cpu/sobel.c). Imported by lone.py
and, copied beside it by setup.sh, by Triton's Python model."""
import numpy as np


def sobel(img):
    p = img.astype(np.int32)
    up, mid, down = p[:-2], p[1:-1], p[2:]
    gx = (up[:, 2:] + 2 * mid[:, 2:] + down[:, 2:]) - (up[:, :-2] + 2 * mid[:, :-2] + down[:, :-2])
    gy = (down[:, :-2] + 2 * down[:, 1:-1] + down[:, 2:]) - (up[:, :-2] + 2 * up[:, 1:-1] + up[:, 2:])
    return np.minimum(np.abs(gx) + np.abs(gy), 255).astype(np.uint8)
