// sobel8_stream: the generated `sobel8` kernel (rtl/sobel8.v, from hdl/src/kernels/sobel8.rs) behind
// the model repository's stream convention at eight lanes (docs/model-repository.md): a beat is eight
// pixels of one row in s_axis_tdata (lane k in bits 8k+7:8k), each row starting a new beat, TLAST on
// the request's last beat; out, eight magnitudes a beat the same way over the interior rows, TKEEP
// marking the lanes a row's last beat fills, TLAST on the request's last. The image width is the
// scalar port `width`, set from the request's W before its stream and held through it; the kernel
// finds each row's partial beat from it, so s_axis_tkeep is not read.
//
// The kernel cannot stall its output: its beats go through a DEPTH-entry FIFO, and a beat is
// accepted only while the FIFO has room for everything that could still arrive (`credit`), so a
// stalled consumer stalls the input and no output is dropped. ap_rst_n (synchronous, active low)
// resets the wrapper; the kernel's counters restart on each request's first beat (in_first).

`default_nettype none

module sobel8_stream (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    input  wire [12:0] width,
    input  wire [63:0] s_axis_tdata,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [7:0]  s_axis_tkeep,  // implied by width: see above
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [63:0] m_axis_tdata,
    output wire [7:0]  m_axis_tkeep,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    localparam integer DEPTH = 16;  // output FIFO entries
    // A beat accepted in cycle t yields at most one output beat by t + 3, plus a row's closing beat
    // by t + 4: with the FIFO at most 10 full when a beat is taken, at most 5 more can land.
    localparam integer CREDIT = 10;

    // ---- Output FIFO: {tlast, tkeep, tdata}.
    reg  [72:0] fifo_mem[0:DEPTH-1];
    reg  [3:0]  wr_ptr;
    reg  [3:0]  rd_ptr;
    reg  [4:0]  count;
    wire        k_ready;
    wire        k_out_valid;
    wire [63:0] k_out_mags;
    wire [3:0]  k_out_count;
    wire        k_out_last;
    wire        push = k_out_valid & ap_rst_n;
    wire        pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 5'd0);
    assign m_axis_tdata = fifo_mem[rd_ptr][63:0];
    assign m_axis_tkeep = fifo_mem[rd_ptr][71:64];
    assign m_axis_tlast = fifo_mem[rd_ptr][72];

    wire credit = ({27'd0, count} <= CREDIT);
    reg  first;  // the next beat is a request's first
    assign s_axis_tready = ap_rst_n & credit & k_ready;
    wire accept = s_axis_tvalid & s_axis_tready;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) first <= 1'b1;
        else if (accept) first <= s_axis_tlast;
    end

    wire [7:0] keep = 8'hff >> (4'd8 - k_out_count);

    always @(posedge ap_clk) begin
        if (push) fifo_mem[wr_ptr] <= {k_out_last, keep, k_out_mags};
        if (!ap_rst_n) begin
            wr_ptr <= 4'd0;
            rd_ptr <= 4'd0;
            count <= 5'd0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 4'd1;
            if (pop) rd_ptr <= rd_ptr + 4'd1;
            count <= count + {4'd0, push} - {4'd0, pop};
        end
    end

    sobel8 kernel (
        .clock(ap_clk),
        .width(width),
        .in_valid(s_axis_tvalid & ap_rst_n & credit),
        .in_first(first),
        .in_last(s_axis_tlast),
        .in_pixels(s_axis_tdata),
        .in_ready(k_ready),
        .out_valid(k_out_valid),
        .out_mags(k_out_mags),
        .out_count(k_out_count),
        .out_last(k_out_last)
    );
endmodule

`default_nettype wire
