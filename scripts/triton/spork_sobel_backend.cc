// spork_sobel_backend.cc: a Triton Inference Server C++ backend (`libtriton_spork_sobel.so`) that
// answers Spork's `sobel` model with the very C code Spork's CPU workers run
// (models/sobel/cpu/sobel.c, behind spork_kernel.h), so a side-by-side run compares the servers,
// not two kernels. Input `image` UINT8 [H, W]; output `magnitudes` UINT8 [H-2, W-2]. One kernel
// state per model instance (Triton runs instances on threads of their own, as Spork runs workers).
// Built and driven by scripts/triton/side-by-side.sh.
#include <cstdio>
#include <cstring>
#include <chrono>
#include <string>
#include <vector>

#include "spork_kernel.h"
#include "triton_api.h"

namespace {

// The error a request is answered with; nullptr when it succeeded.
TRITONSERVER_Error *fail(TRITONSERVER_Error_Code code, const std::string &msg) {
    return TRITONSERVER_ErrorNew(code, msg.c_str());
}

// The request's `image` bytes, contiguous: `gathered` holds them when Triton split the tensor.
TRITONSERVER_Error *image_of(TRITONBACKEND_Request *request, int64_t *h, int64_t *w, const uint8_t **pixels,
                             std::vector<uint8_t> &gathered) {
    TRITONBACKEND_Input *input = nullptr;
    if (TRITONSERVER_Error *e = TRITONBACKEND_RequestInput(request, "image", &input)) return e;
    const char *name = nullptr;
    TRITONSERVER_DataType dtype;
    const int64_t *shape = nullptr;
    uint32_t rank = 0, buffers = 0;
    uint64_t bytes = 0;
    if (TRITONSERVER_Error *e = TRITONBACKEND_InputProperties(input, &name, &dtype, &shape, &rank, &bytes, &buffers))
        return e;
    uint64_t pixels_n = 0;
    if (dtype != TRITONSERVER_TYPE_UINT8 || rank != 2 || shape[0] < 3 || shape[1] < 3 ||
        __builtin_mul_overflow(uint64_t(shape[0]), uint64_t(shape[1]), &pixels_n) || bytes != pixels_n)
        return fail(TRITONSERVER_ERROR_INVALID_ARG, "sobel takes `image`, UINT8 [H, W] with H, W >= 3");
    *h = shape[0];
    *w = shape[1];
    for (uint32_t i = 0; i < buffers; i++) {
        const void *part = nullptr;
        uint64_t len = 0;
        TRITONSERVER_MemoryType where = TRITONSERVER_MEMORY_CPU;
        int64_t where_id = 0;
        if (TRITONSERVER_Error *e = TRITONBACKEND_InputBuffer(input, i, &part, &len, &where, &where_id)) return e;
        if (buffers == 1) {
            *pixels = static_cast<const uint8_t *>(part);
            return nullptr;
        }
        gathered.insert(gathered.end(), static_cast<const uint8_t *>(part), static_cast<const uint8_t *>(part) + len);
    }
    *pixels = gathered.data();
    return nullptr;
}

// Runs one request through the kernel into its response's output.
TRITONSERVER_Error *answer(void *kernel, TRITONBACKEND_Request *request, TRITONBACKEND_Response *response) {
    int64_t h = 0, w = 0;
    const uint8_t *pixels = nullptr;
    std::vector<uint8_t> gathered;
    if (TRITONSERVER_Error *e = image_of(request, &h, &w, &pixels, gathered)) return e;
    const int64_t out_shape[2] = {h - 2, w - 2};
    TRITONBACKEND_Output *output = nullptr;
    if (TRITONSERVER_Error *e =
            TRITONBACKEND_ResponseOutput(response, &output, "magnitudes", TRITONSERVER_TYPE_UINT8, out_shape, 2))
        return e;
    void *out = nullptr;
    TRITONSERVER_MemoryType where = TRITONSERVER_MEMORY_CPU;
    int64_t where_id = 0;
    const uint64_t out_bytes = uint64_t((h - 2) * (w - 2));
    if (TRITONSERVER_Error *e = TRITONBACKEND_OutputBuffer(output, &out, out_bytes, &where, &where_id)) return e;
    if (where == TRITONSERVER_MEMORY_GPU) return fail(TRITONSERVER_ERROR_INTERNAL, "sobel writes host memory only");
    const uint64_t in_shape[2] = {uint64_t(h), uint64_t(w)};
    const uint64_t mag_shape[2] = {uint64_t(h - 2), uint64_t(w - 2)};
    spork_tensor in = {"image", SPORK_UINT8, 2, in_shape, const_cast<uint8_t *>(pixels), uint64_t(h * w)};
    spork_tensor mags = {"magnitudes", SPORK_UINT8, 2, mag_shape, out, out_bytes};
    char err[256] = {0};
    if (spork_kernel_run(kernel, &in, 1, &mags, 1, err, sizeof err) != 0)
        return fail(TRITONSERVER_ERROR_INTERNAL, std::string("sobel: ") + err);
    return nullptr;
}

// Triton's timestamps: the steady clock in nanoseconds.
uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
    char err[256] = {0};
    void *kernel = spork_kernel_init("", err, sizeof err);
    if (kernel == nullptr) return fail(TRITONSERVER_ERROR_INTERNAL, std::string("sobel init: ") + err);
    return TRITONBACKEND_ModelInstanceSetState(instance, kernel);
}

__attribute__((visibility("default"))) TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
    void *kernel = nullptr;
    if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &kernel)) return e;
    spork_kernel_release(kernel);
    return nullptr;
}

// Each request gets its own response (or its own error) and its statistics (what Triton's
// statistics extension reports: the backend tells it); every request is released once.
__attribute__((visibility("default"))) TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests, const uint32_t count) {
    void *kernel = nullptr;
    if (TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &kernel)) return e;
    const uint64_t batch_start = now_ns();
    for (uint32_t i = 0; i < count; i++) {
        const uint64_t start = now_ns();
        uint64_t computed = start;
        bool success = false;
        TRITONBACKEND_Response *response = nullptr;
        if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&response, requests[i])) {
            TRITONSERVER_ErrorDelete(e);
        } else {
            TRITONSERVER_Error *outcome = answer(kernel, requests[i], response);
            computed = now_ns();
            success = outcome == nullptr;
            if (TRITONSERVER_Error *e = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, outcome))
                TRITONSERVER_ErrorDelete(e);
            if (outcome != nullptr) TRITONSERVER_ErrorDelete(outcome);
        }
        if (TRITONSERVER_Error *e =
                TRITONBACKEND_ModelInstanceReportStatistics(instance, requests[i], success, start, start, computed, now_ns()))
            TRITONSERVER_ErrorDelete(e);
        if (TRITONSERVER_Error *e = TRITONBACKEND_RequestRelease(requests[i], TRITONSERVER_REQUEST_RELEASE_ALL))
            TRITONSERVER_ErrorDelete(e);
    }
    const uint64_t batch_end = now_ns();
    if (TRITONSERVER_Error *e =
            TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, count, batch_start, batch_start, batch_end, batch_end))
        TRITONSERVER_ErrorDelete(e);
    return nullptr;
}

}  // extern "C"
