// s2mm: writes exactly `words` words from the RTL kernel's m_axis to device memory. The host knows
// how many words a job produces (stream::expected_words in crates/live/src/datapath/stream.rs), so
// the count, not TLAST, ends the transfer; TLAST is read and dropped.
// Argument order is the host's (crates/live/src/backend/alveo.rs): 0 = buffer, 1 = word count.
// Words are SPORK_MOVER_BITS wide: 64, or 512 for a model whose beats are wider (one beat a word).
// Built by scripts/build-xclbin.sh: v++ -c -k s2mm -D SPORK_MOVER_BITS=64|512.

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>

#ifndef SPORK_MOVER_BITS
#define SPORK_MOVER_BITS 64
#endif

typedef ap_axiu<SPORK_MOVER_BITS, 0, 0, 0> word_t;

extern "C" void s2mm(ap_uint<SPORK_MOVER_BITS>* out, unsigned int words, hls::stream<word_t>& in) {
#pragma HLS INTERFACE m_axi port = out offset = slave bundle = gmem max_write_burst_length = 256
#pragma HLS INTERFACE s_axilite port = out
#pragma HLS INTERFACE s_axilite port = words
#pragma HLS INTERFACE axis port = in
#pragma HLS INTERFACE s_axilite port = return

write_words:
    for (unsigned int i = 0; i < words; i++) {
#pragma HLS PIPELINE II = 1
        word_t w = in.read();
        out[i] = w.data;
    }
}
