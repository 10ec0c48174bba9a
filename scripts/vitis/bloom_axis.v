// bloom_axis: the generated `bloom` kernel (bitstreams/sim/bloom.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 64-bit words, in the layout of
// host/src/runtime/stream.rs. One mm2s transfer (TLAST on its last word) is one job:
//
//   words 0..15: the 1024-bit profile, bit b of word w = profile bit 64w + b (replaces the profile)
//   words 16..:  one term each: [31:0] its hash, [32] = 1 on the last term of a document (63:33
//                ignored); a job must end with a document's last term
//
// Output: one word per document, [15:0] its score (matching terms, modulo 2^16), upper bits zero.
// TLAST marks the job's last output word.
//
// The kernel loads its profile one bit per cycle, so each profile word is held for 64 cycles
// (s_axis_tready low meanwhile): a job's profile takes about 16 x 64 cycles. Terms stream one per
// cycle. The kernel cannot stall and a score appears LAT = 2 cycles after its document's last term,
// so outputs go through a DEPTH-entry FIFO and a word is accepted only while the FIFO has room for
// everything that could still arrive (see `credit`). A stalled consumer stalls the input.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the kernel's running score
// restarts at each document's last term, so reset between jobs.

`default_nettype none

module bloom_axis (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    input  wire [63:0] s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [63:0] m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    localparam integer LAT = 2;  // kernel last-term-to-score latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, score}; async-read distributed RAM.
    reg  [16:0] fifo_mem[0:DEPTH-1];
    reg   [2:0] wr_ptr;
    reg   [2:0] rd_ptr;
    reg   [3:0] count;
    wire        k_out_valid;
    wire [15:0] k_out_score;
    reg [LAT-1:0] last_pipe;  // "this was the job's last term", aligned with the kernel's latency
    wire        push = k_out_valid & ap_rst_n;
    wire        pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = {48'd0, fifo_mem[rd_ptr][15:0]};
    assign m_axis_tlast = fifo_mem[rd_ptr][16];

    // Credit: an accepted word's output lands LAT cycles later and at most one lands per cycle, so
    // accepting only while count <= DEPTH - 1 - LAT never overflows, whatever the consumer does.
    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing and the profile serialiser.
    reg        loading;  // the next word is a profile word
    reg  [3:0] pw_next;  // index of the next profile word
    reg  [3:0] pw_cur;  // index of the profile word being written
    reg  [5:0] pbit;  // its bit being written
    reg [63:0] pword;  // its bits, shifted out one per cycle
    reg        pbusy;  // serialising pword

    assign s_axis_tready = ap_rst_n & credit & ~pbusy;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire term = accept & ~loading;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            loading <= 1'b1;
            pw_next <= 4'd0;
            pw_cur <= 4'd0;
            pbit <= 6'd0;
            pword <= 64'd0;
            pbusy <= 1'b0;
        end else begin
            if (pbusy) begin
                pword <= {1'b0, pword[63:1]};
                pbit <= pbit + 6'd1;
                if (pbit == 6'd63) pbusy <= 1'b0;
            end
            if (accept && loading) begin
                pword <= s_axis_tdata;
                pw_cur <= pw_next;
                pbit <= 6'd0;
                pbusy <= 1'b1;
                pw_next <= pw_next + 4'd1;
                if (pw_next == 4'd15) loading <= 1'b0;
            end
            // The job's last word: the next word starts a new job, with its profile.
            if (accept && s_axis_tlast) begin
                loading <= 1'b1;
                pw_next <= 4'd0;
            end
        end
    end

    always @(posedge ap_clk) begin
        last_pipe <= {last_pipe[LAT-2:0], term & s_axis_tlast};
        if (push) fifo_mem[wr_ptr] <= {last_pipe[LAT-1], k_out_score};
        if (!ap_rst_n) begin
            wr_ptr <= 3'd0;
            rd_ptr <= 3'd0;
            count <= 4'd0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 3'd1;
            if (pop) rd_ptr <= rd_ptr + 3'd1;
            count <= count + {3'd0, push} - {3'd0, pop};
        end
    end

    bloom kernel (
        .clock(ap_clk),
        .load_we(pbusy),
        .load_addr({pw_cur, pbit}),
        .load_bit(pword[0]),
        .in_valid(term),
        .in_last(s_axis_tdata[32]),
        .in_hash(s_axis_tdata[31:0]),
        .out_valid(k_out_valid),
        .out_score(k_out_score)
    );
endmodule

`default_nettype wire
