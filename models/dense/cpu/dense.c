/* dense: the CPU side of Spork's dense int16 layer behind the C ABI (spork_kernel.h): eight neurons,
 * each the dot product of a 64-element int16 vector with its Q8 weights, then ReLU, >> 8 and int16
 * saturation, exactly spork_golden::dense::Layer::forward (and the RTL in rtl/). The weights are
 * cpu/weights.h, generated from seed 0 like the RTL's. Input `vectors` [N, 64] INT16; output
 * `activations` [N, 8] INT16. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spork_kernel.h"
#include "weights.h"

static const spork_kernel_info INFO = {SPORK_KERNEL_ABI_VERSION, "dense"};

const spork_kernel_info *spork_kernel_describe(void) { return &INFO; }

void *spork_kernel_init(const char *config, char *err, size_t err_len) {
    (void)config;
    (void)err;
    (void)err_len;
    return malloc(1); /* no state; non-NULL means success */
}

static int16_t activate(int64_t acc) {
    if (acc < 0) return 0;
    acc >>= 8;
    return (int16_t)(acc > INT16_MAX ? INT16_MAX : acc);
}

int spork_kernel_run(void *state, const spork_tensor *inputs, uint32_t n_inputs, spork_tensor *outputs,
                     uint32_t n_outputs, char *err, size_t err_len) {
    (void)state;
    if (n_inputs != 1 || n_outputs != 1 || inputs[0].rank != 2 || inputs[0].shape[1] != 64) {
        snprintf(err, err_len, "dense takes one [N, 64] tensor of vectors and gives one output");
        return 1;
    }
    const uint64_t n = inputs[0].shape[0];
    const int16_t *x = (const int16_t *)inputs[0].data;
    int16_t *y = (int16_t *)outputs[0].data;
    for (uint64_t v = 0; v < n; v++) {
        for (int j = 0; j < 8; j++) {
            int64_t acc = 0;
            for (int i = 0; i < 64; i++) acc += (int64_t)x[v * 64 + i] * WEIGHTS[j][i];
            y[v * 8 + j] = activate(acc);
        }
    }
    return 0;
}

void spork_kernel_release(void *state) { free(state); }
