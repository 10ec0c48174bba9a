// bloom_axis: the generated `bloom` kernel (bitstreams/sim/bloom.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 32-bit words.
//
// Input stream: a sequence of packets, each one header word followed by its payload.
//   profile header: [31] = 1, then 32 words: word i bit j is profile bit 32*i + j (the profile's
//                   1024 bits as little-endian u32 words, as `spork_golden::bloom::Profile` stores
//                   them). Replaces the whole profile; documents after it are scored against it.
//   document header: [31] = 0, [23:0] term count n (>= 1; a zero count is skipped, no output),
//                   then n words, one 32-bit term hash each.
// The wrapper frames packets by these counts, not by TLAST: the data mover sets TLAST only at the
// end of a transfer, and a transfer may hold many packets (s_axis_tlast is ignored).
//
// Output stream: one word per document, [15:0] its score (matching terms, modulo 2^16), upper bits
// zero, TLAST set on every word (each score is a packet of one).
//
// The kernel loads its profile one bit per cycle, so each profile word is held for 32 cycles
// (s_axis_tready low meanwhile): a profile load takes about 32 x 32 cycles. Terms stream one per
// cycle. The kernel cannot stall and its score appears LAT = 2 cycles after a document's last term,
// so outputs go through a DEPTH-entry FIFO and a word is accepted only while the FIFO has room for
// everything that could still arrive (see `credit`). A stalled consumer stalls the input.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the profile survives a reset,
// and the kernel's running score restarts at each document's last term, so reset between documents.

`default_nettype none

module bloom_axis (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    input  wire [31:0] s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [31:0] m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    localparam integer LAT = 2;  // kernel last-term-to-score latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO of scores; async-read distributed RAM.
    reg  [15:0] fifo_mem[0:DEPTH-1];
    reg   [2:0] wr_ptr;
    reg   [2:0] rd_ptr;
    reg   [3:0] count;
    wire        k_out_valid;
    wire [15:0] k_out_score;
    wire        push = k_out_valid & ap_rst_n;
    wire        pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = {16'd0, fifo_mem[rd_ptr]};
    assign m_axis_tlast = 1'b1;

    // Credit: an accepted word's output lands LAT cycles later and at most one lands per cycle, so
    // accepting only while count <= DEPTH - 1 - LAT never overflows, whatever the consumer does.
    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing and the profile serialiser.
    reg        want_header;  // the next word is a packet header
    reg        loading;  // profile words follow
    reg [23:0] remaining;  // terms left in the current document
    reg [31:0] pword;  // the profile word being written, shifted out a bit per cycle
    reg  [9:0] paddr;  // the profile bit being written
    reg        pbusy;  // serialising pword

    assign s_axis_tready = ap_rst_n & credit & ~pbusy;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire term = accept & ~want_header & ~loading;
    wire last_term = (remaining == 24'd1);

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            want_header <= 1'b1;
            loading <= 1'b0;
            remaining <= 24'd0;
            pword <= 32'd0;
            paddr <= 10'd0;
            pbusy <= 1'b0;
        end else begin
            if (pbusy) begin
                pword <= {1'b0, pword[31:1]};
                paddr <= paddr + 10'd1;
                if (paddr[4:0] == 5'd31) pbusy <= 1'b0;
            end
            if (accept) begin
                if (want_header) begin
                    if (s_axis_tdata[31]) begin
                        loading <= 1'b1;
                        paddr <= 10'd0;
                        want_header <= 1'b0;
                    end else if (s_axis_tdata[23:0] != 24'd0) begin
                        remaining <= s_axis_tdata[23:0];
                        want_header <= 1'b0;
                    end
                end else if (loading) begin
                    // pbusy was low, so paddr sits on a word boundary: paddr[9:5] is this word's index.
                    pword <= s_axis_tdata;
                    pbusy <= 1'b1;
                    if (paddr[9:5] == 5'd31) begin
                        loading <= 1'b0;
                        want_header <= 1'b1;
                    end
                end else begin
                    remaining <= remaining - 24'd1;
                    if (last_term) want_header <= 1'b1;
                end
            end
        end
    end

    always @(posedge ap_clk) begin
        if (push) fifo_mem[wr_ptr] <= k_out_score;
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
        .load_addr(paddr),
        .load_bit(pword[0]),
        .in_valid(term),
        .in_last(last_term),
        .in_hash(s_axis_tdata),
        .out_valid(k_out_valid),
        .out_score(k_out_score)
    );
endmodule

`default_nettype wire
