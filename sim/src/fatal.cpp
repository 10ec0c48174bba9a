// Verilator's $stop and $fatal, and its runtime's own fatal errors, print and abort() the process
// by default: a user's design would take the server down with it. Compiled into the runtime with
// VL_USER_FATAL and VL_USER_STOP, they throw instead; the shim catches the throw at the model's C
// ABI, fails that instance (every later call is refused with the message) and returns, so only the
// design's own request and model fail.
#include "verilated.h"

#include <stdexcept>
#include <string>

void vl_fatal(const char* filename, int linenum, const char* hier, const char* msg) VL_MT_UNSAFE {
    (void)hier;
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    std::string what = msg ? msg : "a fatal error";
    if (filename && filename[0]) what += std::string(" at ") + filename + ":" + std::to_string(linenum);
    throw std::runtime_error(what);
}

void vl_stop(const char* filename, int linenum, const char* hier) VL_MT_UNSAFE {
    vl_fatal(filename, linenum, hier, "Verilog $stop");
}
