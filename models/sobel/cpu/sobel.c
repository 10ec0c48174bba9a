/* sobel: the CPU side of Spork's 3x3 Sobel kernel behind the C ABI (spork_kernel.h): the gradient
 * magnitude min(255, |Gx| + |Gy|) of each interior pixel of an 8-bit grayscale image, exactly
 * spork_golden::sobel::sobel (and the RTL in rtl/). Input `image` [H, W]; output `magnitudes`
 * [H-2, W-2]. The optional part (`refinement`) is a second image run the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spork_kernel.h"

static const spork_kernel_info INFO = {SPORK_KERNEL_ABI_VERSION, "sobel"};

const spork_kernel_info *spork_kernel_describe(void) { return &INFO; }

void *spork_kernel_init(const char *config, char *err, size_t err_len) {
    (void)config;
    (void)err;
    (void)err_len;
    return malloc(1); /* no state; non-NULL means success */
}

int spork_kernel_run(void *state, const spork_tensor *inputs, uint32_t n_inputs, spork_tensor *outputs,
                     uint32_t n_outputs, char *err, size_t err_len) {
    (void)state;
    if (n_inputs != 1 || n_outputs != 1 || inputs[0].rank != 2) {
        snprintf(err, err_len, "sobel takes one [H, W] image and gives one output");
        return 1;
    }
    const uint64_t h = inputs[0].shape[0], w = inputs[0].shape[1];
    const uint8_t *px = (const uint8_t *)inputs[0].data;
    uint8_t *out = (uint8_t *)outputs[0].data;
    for (uint64_t r = 1; r + 1 < h; r++) {
        const uint8_t *up = px + (r - 1) * w, *mid = px + r * w, *down = px + (r + 1) * w;
        for (uint64_t c = 1; c + 1 < w; c++) {
            int gx = (up[c + 1] + 2 * mid[c + 1] + down[c + 1]) - (up[c - 1] + 2 * mid[c - 1] + down[c - 1]);
            int gy = (down[c - 1] + 2 * down[c] + down[c + 1]) - (up[c - 1] + 2 * up[c] + up[c + 1]);
            int m = abs(gx) + abs(gy);
            *out++ = (uint8_t)(m > 255 ? 255 : m);
        }
    }
    return 0;
}

void spork_kernel_release(void *state) { free(state); }
