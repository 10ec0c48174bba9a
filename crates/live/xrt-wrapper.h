/* The XRT C API the `xrt` feature binds (bindgen input). */
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>
#include <xrt/xrt_bo.h>
