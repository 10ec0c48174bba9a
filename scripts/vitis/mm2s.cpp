// mm2s: reads `words` words (SPORK_MOVER_BITS wide: 64, or 512 for a model whose beats are wider,
// one beat a word; scalars in a header word's low 64 bits) from device memory and streams them to
// the RTL kernel's s_axis, TLAST on the last one: a transfer is one job in the layout of
// crates/live/src/datapath/stream.rs, and
// the wrappers (scripts/vitis/*_axis.v) start the next job after a TLAST. A model repository's
// kernel takes its scalars first (`header` words, never with TLAST) and, when its rows end with
// TLAST, `row` > 0 puts TLAST on every row-th word after the header too.
// Argument order is the host's (crates/live/src/backend/alveo.rs): 0 = buffer, 1 = word count,
// 2 = header words, 3 = row length in words (0: TLAST on the last word only).
// Built by scripts/build-xclbin.sh: v++ -c -k mm2s -D SPORK_MOVER_BITS=64|512.

#include <ap_axi_sdata.h>
#include <ap_int.h>
#include <hls_stream.h>

#ifndef SPORK_MOVER_BITS
#define SPORK_MOVER_BITS 64
#endif

// Words with TKEEP/TSTRB/TLAST and no TUSER/TID/TDEST: the wrappers use TDATA and TLAST.
typedef ap_axiu<SPORK_MOVER_BITS, 0, 0, 0> word_t;

extern "C" void mm2s(const ap_uint<SPORK_MOVER_BITS>* in, unsigned int words, unsigned int header, unsigned int row,
                     hls::stream<word_t>& out) {
#pragma HLS INTERFACE m_axi port = in offset = slave bundle = gmem max_read_burst_length = 256
#pragma HLS INTERFACE s_axilite port = in
#pragma HLS INTERFACE s_axilite port = words
#pragma HLS INTERFACE s_axilite port = header
#pragma HLS INTERFACE s_axilite port = row
#pragma HLS INTERFACE axis port = out
#pragma HLS INTERFACE s_axilite port = return

// One word per cycle: the kernels consume one item per cycle, so the mover must not be the limit.
    unsigned int in_row = 0;
read_words:
    for (unsigned int i = 0; i < words; i++) {
#pragma HLS PIPELINE II = 1
        word_t w;
        w.data = in[i];
        w.keep = -1;
        w.strb = -1;
        bool row_end = false;
        if (row != 0 && i >= header) {
            in_row = (in_row + 1 == row) ? 0 : in_row + 1;
            row_end = (in_row == 0);
        }
        w.last = (i == words - 1) || row_end;
        out.write(w);
    }
}
