/* bloom: the CPU side of Spork's Bloom-filter document scoring behind the C ABI (spork_kernel.h):
 * each document's score is the count (mod 2^16) of its terms whose three profile bits (hash bits
 * 9:0, 19:10 and 29:20) are all set, exactly spork_golden::bloom::Profile::score (and the RTL in
 * rtl/). The profile is cpu/profile.h, generated from seed 0 like the RTL's. Input `documents`
 * [D, T] UINT32 term hashes; output `scores` [D] UINT16. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile.h"
#include "spork_kernel.h"

static const spork_kernel_info INFO = {SPORK_KERNEL_ABI_VERSION, "bloom"};

const spork_kernel_info *spork_kernel_describe(void) { return &INFO; }

void *spork_kernel_init(const char *config, char *err, size_t err_len) {
    (void)config;
    (void)err;
    (void)err_len;
    return malloc(1); /* no state; non-NULL means success */
}

static int bit(uint32_t index) { return (int)(PROFILE[index / 64] >> (index % 64) & 1u); }

static int contains(uint32_t hash) {
    return bit(hash & 0x3ffu) && bit(hash >> 10 & 0x3ffu) && bit(hash >> 20 & 0x3ffu);
}

int spork_kernel_run(void *state, const spork_tensor *inputs, uint32_t n_inputs, spork_tensor *outputs,
                     uint32_t n_outputs, char *err, size_t err_len) {
    (void)state;
    if (n_inputs != 1 || n_outputs != 1 || inputs[0].rank != 2) {
        snprintf(err, err_len, "bloom takes one [D, T] tensor of documents and gives one output");
        return 1;
    }
    const uint64_t docs = inputs[0].shape[0], terms = inputs[0].shape[1];
    const uint32_t *hash = (const uint32_t *)inputs[0].data;
    uint16_t *scores = (uint16_t *)outputs[0].data;
    for (uint64_t d = 0; d < docs; d++) {
        uint16_t score = 0;
        for (uint64_t t = 0; t < terms; t++) score = (uint16_t)(score + contains(hash[d * terms + t]));
        scores[d] = score;
    }
    return 0;
}

void spork_kernel_release(void *state) { free(state); }
