// mm2s: reads `words` 32-bit words from device memory and streams them to the RTL kernel's
// s_axis, TLAST on the last word of the transfer. The kernels frame their packets by header
// counts, so one transfer may carry any number of packets (see scripts/vitis/*_axis.v).
// Built by scripts/build-xclbin.sh: v++ -c -k mm2s.

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>

// 32-bit words with TKEEP/TSTRB/TLAST and no TUSER/TID/TDEST: the wrappers use TDATA and TLAST.
typedef ap_axiu<32, 0, 0, 0> word_t;

extern "C" void mm2s(const ap_uint<32>* in, hls::stream<word_t>& out, unsigned int words) {
#pragma HLS INTERFACE m_axi port = in offset = slave bundle = gmem max_read_burst_length = 256
#pragma HLS INTERFACE axis port = out
#pragma HLS INTERFACE s_axilite port = in
#pragma HLS INTERFACE s_axilite port = words
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
