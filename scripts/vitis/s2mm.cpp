// s2mm: writes exactly `words` 32-bit words from the RTL kernel's m_axis to device memory. The host
// knows how many words its packets produce (see scripts/vitis/*_axis.v), so the count, not TLAST,
// ends the transfer; TLAST is read and dropped.
// Built by scripts/build-xclbin.sh: v++ -c -k s2mm.

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>

typedef ap_axiu<32, 0, 0, 0> word_t;

extern "C" void s2mm(ap_uint<32>* out, hls::stream<word_t>& in, unsigned int words) {
#pragma HLS INTERFACE m_axi port = out offset = slave bundle = gmem max_write_burst_length = 256
#pragma HLS INTERFACE axis port = in
#pragma HLS INTERFACE s_axilite port = out
#pragma HLS INTERFACE s_axilite port = words
#pragma HLS INTERFACE s_axilite port = return

write_words:
    for (unsigned int i = 0; i < words; i++) {
#pragma HLS PIPELINE II = 1
        word_t w = in.read();
        out[i] = w.data;
    }
}
