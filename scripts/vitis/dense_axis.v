// dense_axis: the generated `dense` kernel (bitstreams/sim/dense.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 32-bit words.
//
// Input stream: a sequence of packets, each one header word followed by its payload.
//   weights header: [31] = 1, then 512 words: word i holds weights[i / 64][i % 64] (neuron, input:
//                   `spork_golden::dense::Layer::weights` in row-major order) as int16 in [15:0].
//                   Vectors after it use the new weights.
//   vector header:  [31] = 0, [6:0] length n (1..64; a zero length is skipped, no output), then n
//                   words, one int16 input element each in [15:0].
// The upper half of every payload word is ignored. The wrapper frames packets by these counts, not
// by TLAST: the data mover sets TLAST only at the end of a transfer, and a transfer may hold many
// packets (s_axis_tlast is ignored).
//
// Output stream: 4 words per vector, word k = {y[2k+1], y[2k]} (the 8 int16 outputs as a
// little-endian i16 array: `Layer::forward`), TLAST on the fourth.
//
// The kernel takes an element every cycle and cannot stall; a vector's 8 outputs appear together
// LAT = 2 cycles after its last element. They go into a DEPTH-entry FIFO of 128-bit entries that is
// drained a word per cycle, and a word is accepted only while the FIFO has room for everything that
// could still arrive (see `credit`): vectors shorter than 4 elements stall the input, longer ones
// stream at one element per cycle. A stalled consumer stalls the input.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the weights survive a reset,
// and the accumulators restart at each vector's last element, so reset between vectors.

`default_nettype none

module dense_axis (
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
    localparam integer LAT = 2;  // kernel last-element-to-output latency, cycles
    localparam integer DEPTH = 4;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO of 8 x int16 results, read out as 4 words each.
    reg [127:0] fifo_mem[0:DEPTH-1];
    reg   [1:0] wr_ptr;
    reg   [1:0] rd_ptr;
    reg   [2:0] count;
    reg   [1:0] word;  // which 32-bit word of the head entry goes out next
    wire        k_out_valid;
    wire [15:0] y0, y1, y2, y3, y4, y5, y6, y7;
    wire        push = k_out_valid & ap_rst_n;
    wire        pop_word = m_axis_tvalid & m_axis_tready;
    wire        pop = pop_word & (word == 2'd3);  // the head entry's last word leaves
    wire [127:0] head = fifo_mem[rd_ptr];

    assign m_axis_tvalid = (count != 3'd0);
    assign m_axis_tdata = head[32*word+:32];
    assign m_axis_tlast = (word == 2'd3);

    // Credit: an accepted word's result lands LAT cycles later and at most one lands per cycle, so
    // accepting only while count <= DEPTH - 1 - LAT never overflows, whatever the consumer does.
    wire credit = ({29'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing.
    reg       want_header;  // the next word is a packet header
    reg       loading;  // weight words follow
    reg [8:0] widx;  // the next weight: {neuron, index}
    reg [6:0] remaining;  // elements left in the current vector

    assign s_axis_tready = ap_rst_n & credit;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire weight = accept & ~want_header & loading;
    wire element = accept & ~want_header & ~loading;
    wire last_element = (remaining == 7'd1);

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            want_header <= 1'b1;
            loading <= 1'b0;
            widx <= 9'd0;
            remaining <= 7'd0;
        end else if (accept) begin
            if (want_header) begin
                if (s_axis_tdata[31]) begin
                    loading <= 1'b1;
                    widx <= 9'd0;
                    want_header <= 1'b0;
                end else if (s_axis_tdata[6:0] != 7'd0) begin
                    remaining <= s_axis_tdata[6:0];
                    want_header <= 1'b0;
                end
            end else if (loading) begin
                widx <= widx + 9'd1;
                if (widx == 9'd511) begin
                    loading <= 1'b0;
                    want_header <= 1'b1;
                end
            end else begin
                remaining <= remaining - 7'd1;
                if (last_element) want_header <= 1'b1;
            end
        end
    end

    always @(posedge ap_clk) begin
        if (push) fifo_mem[wr_ptr] <= {y7, y6, y5, y4, y3, y2, y1, y0};
        if (!ap_rst_n) begin
            wr_ptr <= 2'd0;
            rd_ptr <= 2'd0;
            count <= 3'd0;
            word <= 2'd0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 2'd1;
            if (pop_word) word <= word + 2'd1;
            if (pop) rd_ptr <= rd_ptr + 2'd1;
            count <= count + {2'd0, push} - {2'd0, pop};
        end
    end

    // rust-hdl names the output array's ports out_y$0..out_y$7: plain Verilog identifiers ($ is
    // legal after the first character), so they connect by name without escaping.
    dense kernel (
        .clock(ap_clk),
        .w_we(weight),
        .w_neuron(widx[8:6]),
        .w_index(widx[5:0]),
        .w_data(s_axis_tdata[15:0]),
        .in_valid(element),
        .in_last(last_element),
        .in_x(s_axis_tdata[15:0]),
        .out_valid(k_out_valid),
        .out_y$0(y0),
        .out_y$1(y1),
        .out_y$2(y2),
        .out_y$3(y3),
        .out_y$4(y4),
        .out_y$5(y5),
        .out_y$6(y6),
        .out_y$7(y7)
    );
endmodule

`default_nettype wire
