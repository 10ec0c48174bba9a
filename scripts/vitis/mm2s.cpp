// mm2s: reads `words` 64-bit words from device memory and streams them to the RTL kernel's s_axis,
// TLAST on the last one: a transfer is one job in the layout of host/src/runtime/stream.rs, and
// the wrappers (scripts/vitis/*_axis.v) start the next job after a TLAST.
// Argument order is the host's (host/src/runtime/backend/alveo.rs): 0 = buffer, 1 = word count.
// Built by scripts/build-xclbin.sh: v++ -c -k mm2s.

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>

// 64-bit words with TKEEP/TSTRB/TLAST and no TUSER/TID/TDEST: the wrappers use TDATA and TLAST.
typedef ap_axiu<64, 0, 0, 0> word_t;

extern "C" void mm2s(const ap_uint<64>* in, unsigned int words, hls::stream<word_t>& out) {
#pragma HLS INTERFACE m_axi port = in offset = slave bundle = gmem max_read_burst_length = 256
#pragma HLS INTERFACE s_axilite port = in
#pragma HLS INTERFACE s_axilite port = words
#pragma HLS INTERFACE axis port = out
#pragma HLS INTERFACE s_axilite port = return

// One word per cycle: the kernels consume one item per cycle, so the mover must not be the limit.
read_words:
    for (unsigned int i = 0; i < words; i++) {
#pragma HLS PIPELINE II = 1
        word_t w;
        w.data = in[i];
        w.keep = -1;
        w.strb = -1;
        w.last = (i == words - 1);
        out.write(w);
    }
}
