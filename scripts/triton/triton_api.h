/*
 * triton_api.h: the part of Triton Inference Server's public C API (TRITONBACKEND 1.x, TRITONSERVER
 * 1.x, as in the server 2.51 that PyPI's nvidia-pytriton bundles) that spork_sobel_backend.cc uses,
 * declared here so the backend builds with g++ alone: the server's headers are not packaged for
 * Debian or PyPI. Types are opaque; the enums carry the values the API defines. The symbols resolve
 * from the server process when it loads the backend.
 */
#ifndef SPORK_TRITON_API_H
#define SPORK_TRITON_API_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;

typedef enum { TRITONSERVER_TYPE_UINT8 = 2 } TRITONSERVER_DataType;
typedef enum { TRITONSERVER_MEMORY_CPU = 0, TRITONSERVER_MEMORY_CPU_PINNED = 1, TRITONSERVER_MEMORY_GPU = 2 } TRITONSERVER_MemoryType;
typedef enum { TRITONSERVER_ERROR_INTERNAL = 1, TRITONSERVER_ERROR_INVALID_ARG = 3 } TRITONSERVER_Error_Code;
enum { TRITONSERVER_REQUEST_RELEASE_ALL = 1, TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1 };

TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error);

TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request, const char *name,
                                               TRITONBACKEND_Input **input);
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                                                  TRITONSERVER_DataType *datatype, const int64_t **shape,
                                                  uint32_t *dims_count, uint64_t *byte_size,
                                                  uint32_t *buffer_count);
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, uint32_t index, const void **buffer,
                                              uint64_t *buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
                                              int64_t *memory_type_id);
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request, uint32_t release_flags);

TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response, TRITONBACKEND_Request *request);
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response, TRITONBACKEND_Output **output,
                                                 const char *name, TRITONSERVER_DataType datatype,
                                                 const int64_t *shape, uint32_t dims_count);
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer, uint64_t buffer_byte_size,
                                               TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id);
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, uint32_t send_flags,
                                               TRITONSERVER_Error *error);

/* Statistics: timestamps are steady-clock nanoseconds; reported before the request is released. */
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                TRITONBACKEND_Request *request, const bool success,
                                                                const uint64_t exec_start_ns,
                                                                const uint64_t compute_start_ns,
                                                                const uint64_t compute_end_ns,
                                                                const uint64_t exec_end_ns);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                     const uint64_t batch_size,
                                                                     const uint64_t exec_start_ns,
                                                                     const uint64_t compute_start_ns,
                                                                     const uint64_t compute_end_ns,
                                                                     const uint64_t exec_end_ns);

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *instance, void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *instance, void *state);

#ifdef __cplusplus
}
#endif

#endif
