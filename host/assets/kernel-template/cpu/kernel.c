/*
 * {{name}}: the CPU implementation, against spork_kernel.h (the C ABI, version 1).
 *
 * Spork compiles this file when it loads the model (model.toml's [cpu] sources) and calls:
 *   spork_kernel_describe  once per load: the ABI version this was built against and a name;
 *   spork_kernel_init      once per CPU worker: its state (anything non-NULL; NULL means failure);
 *   spork_kernel_run       once per request, on that worker's thread, with the inputs and outputs in
 *                          model.toml's order; Spork allocates every buffer (8-byte aligned);
 *   spork_kernel_release   when the worker stops.
 *
 * The skeleton adds one to each UINT32 element of `x`, giving `y`: the same as rtl/{{name}}.v, which
 * `spork kernel check` compares against this file.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "spork_kernel.h"

static const spork_kernel_info INFO = {SPORK_KERNEL_ABI_VERSION, "{{name}}"};

const spork_kernel_info *spork_kernel_describe(void) { return &INFO; }

/* Per-worker state: put anything you want to build once (tables, scratch buffers) in here. */
typedef struct kernel_state {
    int unused;
} kernel_state;

void *spork_kernel_init(const char *config, char *err, size_t err_len) {
    (void)config; /* model.toml's [cpu] config string */
    kernel_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, err_len, "{{name}}: out of memory");
    }
    return s;
}

int spork_kernel_run(void *state, const spork_tensor *inputs, uint32_t n_inputs, spork_tensor *outputs,
                     uint32_t n_outputs, char *err, size_t err_len) {
    (void)state;
    /* Check what you were given; a non-zero return sends the message to the client (HTTP 500). */
    if (n_inputs != 1 || n_outputs != 1) {
        snprintf(err, err_len, "{{name}}: want 1 input and 1 output, got %u and %u", (unsigned)n_inputs,
                 (unsigned)n_outputs);
        return 1;
    }
    const spork_tensor *x = &inputs[0];
    spork_tensor *y = &outputs[0];
    if (x->dtype != SPORK_UINT32 || y->dtype != SPORK_UINT32) {
        snprintf(err, err_len, "{{name}}: x and y must be UINT32 (dtype %u), got %u -> %u", (unsigned)SPORK_UINT32,
                 (unsigned)x->dtype, (unsigned)y->dtype);
        return 1;
    }
    if (x->bytes != y->bytes) {
        snprintf(err, err_len, "{{name}}: x has %llu bytes, y %llu", (unsigned long long)x->bytes,
                 (unsigned long long)y->bytes);
        return 1;
    }

    /* YOUR LOGIC: replace this loop with your own. */
    const uint32_t *in = (const uint32_t *)x->data;
    uint32_t *out = (uint32_t *)y->data;
    uint64_t n = x->bytes / sizeof(uint32_t);
    for (uint64_t i = 0; i < n; i++) {
        out[i] = in[i] + 1u;
    }
    return 0;
}

void spork_kernel_release(void *state) { free(state); }
