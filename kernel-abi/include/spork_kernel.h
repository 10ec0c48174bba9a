/*
 * spork_kernel.h: the C ABI of a Spork CPU kernel, version 1.
 *
 * A model in a Spork model repository names a shared library in its model.toml ([cpu] library).
 * Spork opens it with dlopen, reads spork_kernel_describe() and refuses a library built against
 * another ABI version. Each CPU worker then calls spork_kernel_init once, spork_kernel_run once per
 * request (always from that worker's thread, never concurrently on one state), and
 * spork_kernel_release when it stops. Different workers run on different threads at once: keep
 * per-request state in the state init returns, not in globals.
 *
 * Tensors are row-major, in the machine's byte order (little-endian on every platform Spork runs
 * on). Spork allocates every buffer, inputs and outputs, aligned to 8 bytes, sized from the shapes
 * model.toml gives; output shapes are fixed by the input shapes before the call, so a kernel only
 * fills its outputs' data. It never frees a buffer it was handed.
 *
 * Errors: a function that fails writes a NUL-terminated message of at most err_len bytes into err
 * (snprintf(err, err_len, ...)) and returns non-zero (or NULL from init). A request whose run fails
 * is answered with HTTP 500 / gRPC INTERNAL carrying that message.
 */
#ifndef SPORK_KERNEL_H
#define SPORK_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A library reports the version it was built against. */
#define SPORK_KERNEL_ABI_VERSION 1u

/* Most dimensions a tensor has. */
#define SPORK_MAX_RANK 8u

/* Element types: the Open Inference Protocol's datatype of the same name. */
typedef enum spork_dtype {
    SPORK_UINT8 = 1,
    SPORK_UINT16 = 2,
    SPORK_UINT32 = 3,
    SPORK_UINT64 = 4,
    SPORK_INT8 = 5,
    SPORK_INT16 = 6,
    SPORK_INT32 = 7,
    SPORK_INT64 = 8,
    SPORK_FP32 = 9,
    SPORK_FP64 = 10
} spork_dtype;

/* One tensor. For inputs `data` is read-only; for outputs the kernel writes all `bytes` of it. */
typedef struct spork_tensor {
    const char *name;      /* its name in model.toml */
    uint32_t dtype;        /* a spork_dtype */
    uint32_t rank;         /* dimensions, at most SPORK_MAX_RANK */
    const uint64_t *shape; /* rank dimensions */
    void *data;            /* row-major elements, aligned to 8 bytes */
    uint64_t bytes;        /* product(shape) * element size */
} spork_tensor;

/* What a library is. */
typedef struct spork_kernel_info {
    uint32_t abi_version; /* SPORK_KERNEL_ABI_VERSION when the library was built */
    const char *name;     /* the kernel's name, for messages */
} spork_kernel_info;

/* Required exports. */

/* Static information; called first, once per load. */
const spork_kernel_info *spork_kernel_describe(void);

/* A worker's state. `config` is model.toml's [cpu] config string ("" when absent). NULL on failure,
 * with a message in err. */
void *spork_kernel_init(const char *config, char *err, size_t err_len);

/* One request: inputs in model.toml's [[input]] order, outputs in its [[output]] order. 0 on
 * success; non-zero with a message in err on failure. */
int spork_kernel_run(void *state, const spork_tensor *inputs, uint32_t n_inputs, spork_tensor *outputs,
                     uint32_t n_outputs, char *err, size_t err_len);

/* Frees what init made. */
void spork_kernel_release(void *state);

#ifdef __cplusplus
}
#endif

#endif /* SPORK_KERNEL_H */
