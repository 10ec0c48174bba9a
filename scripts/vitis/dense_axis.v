// dense_axis: the generated `dense` kernel (bitstreams/sim/dense.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 64-bit words, in the layout of
// host/src/runtime/stream.rs. One mm2s transfer (TLAST on its last word) is one job:
//
//   words 0..127: the 512 int16 weights, four per word: weight 4w + k in bits 16k+15:16k of word w;
//                 weight n is neuron n / 64, input n % 64 (replaces the weights)
//   words 128..:  one input element each: [15:0] int16, [16] = 1 on the last element of a vector
//                 (1..64 elements; 63:17 ignored); a job must end with a vector's last element
//
// Output: 2 words per vector, the 8 int16 outputs four per word (neuron 4h + k in bits 16k+15:16k
// of word h), as `spork_golden::dense::Layer::forward`. TLAST marks the job's last output word.
//
// The kernel writes one weight per cycle, so each weight word is held for 4 cycles (s_axis_tready
// low meanwhile). Elements stream one per cycle. The kernel cannot stall and a vector's outputs
// appear together LAT = 2 cycles after its last element; they go into a DEPTH-entry FIFO of 128-bit
// entries drained a word per cycle, and a word is accepted only while the FIFO has room for
// everything that could still arrive (see `credit`): vectors of one element stall the input, longer
// ones stream at one element per cycle. A stalled consumer stalls the input.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the accumulators restart at
// each vector's last element, so reset between jobs.

`default_nettype none

module dense_axis (
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
    localparam integer LAT = 2;  // kernel last-element-to-output latency, cycles
    localparam integer DEPTH = 4;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, y7..y0}, each entry read out as 2 words.
    reg [128:0] fifo_mem[0:DEPTH-1];
    reg   [1:0] wr_ptr;
    reg   [1:0] rd_ptr;
    reg   [2:0] count;
    reg         half;  // which word of the head entry goes out next
    wire        k_out_valid;
    wire [15:0] y0, y1, y2, y3, y4, y5, y6, y7;
    reg [LAT-1:0] last_pipe;  // "this was the job's last element", aligned with the kernel's latency
    wire        push = k_out_valid & ap_rst_n;
    wire        pop_word = m_axis_tvalid & m_axis_tready;
    wire        pop = pop_word & half;  // the head entry's second word leaves
    wire [128:0] head = fifo_mem[rd_ptr];

    assign m_axis_tvalid = (count != 3'd0);
    assign m_axis_tdata = half ? head[127:64] : head[63:0];
    assign m_axis_tlast = half & head[128];

    // Credit: an accepted word's result lands LAT cycles later and at most one lands per cycle, so
    // accepting only while count <= DEPTH - 1 - LAT never overflows, whatever the consumer does.
    wire credit = ({29'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing and the weight serialiser.
    reg        loading;  // the next word is a weight word
    reg  [6:0] ww_next;  // index of the next weight word
    reg  [8:0] widx;  // the weight being written: 4 * word + k = 64 * neuron + input
    reg [63:0] wword;  // the weight word being written, shifted out 16 bits per cycle
    reg        wbusy;  // serialising wword

    assign s_axis_tready = ap_rst_n & credit & ~wbusy;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire element = accept & ~loading;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            loading <= 1'b1;
            ww_next <= 7'd0;
            widx <= 9'd0;
            wword <= 64'd0;
            wbusy <= 1'b0;
        end else begin
            if (wbusy) begin
                wword <= {16'd0, wword[63:16]};
                widx <= widx + 9'd1;
                if (widx[1:0] == 2'd3) wbusy <= 1'b0;
            end
            if (accept && loading) begin
                wword <= s_axis_tdata;
                widx <= {ww_next, 2'd0};
                wbusy <= 1'b1;
                ww_next <= ww_next + 7'd1;
                if (ww_next == 7'd127) loading <= 1'b0;
            end
            // The job's last word: the next word starts a new job, with its weights.
            if (accept && s_axis_tlast) begin
                loading <= 1'b1;
                ww_next <= 7'd0;
            end
        end
    end

    always @(posedge ap_clk) begin
        last_pipe <= {last_pipe[LAT-2:0], element & s_axis_tlast};
        if (push) fifo_mem[wr_ptr] <= {last_pipe[LAT-1], y7, y6, y5, y4, y3, y2, y1, y0};
        if (!ap_rst_n) begin
            wr_ptr <= 2'd0;
            rd_ptr <= 2'd0;
            count <= 3'd0;
            half <= 1'b0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 2'd1;
            if (pop_word) half <= ~half;
            if (pop) rd_ptr <= rd_ptr + 2'd1;
            count <= count + {2'd0, push} - {2'd0, pop};
        end
    end

    // rust-hdl names the output array's ports out_y$0..out_y$7: plain Verilog identifiers ($ is
    // legal after the first character), so they connect by name without escaping.
    dense kernel (
        .clock(ap_clk),
        .w_we(wbusy),
        .w_neuron(widx[8:6]),
        .w_index(widx[5:0]),
        .w_data(wword[15:0]),
        .in_valid(element),
        .in_last(s_axis_tdata[16]),
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
