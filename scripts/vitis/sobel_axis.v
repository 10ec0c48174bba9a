// sobel_axis: the generated `sobel` kernel (bitstreams/sim/sobel.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 64-bit words, in the layout of
// host/src/runtime/stream.rs. One mm2s transfer (TLAST on its last word) is one job:
//
//   word 0:    [8:0] image width, 3..256 (bits 63:9 ignored)
//   words 1..: one pixel each in [7:0], raster order, a whole number of rows, at least 3 (63:8 ignored)
//
// Output: one word per interior pixel, [7:0] the magnitude min(255, |Gx| + |Gy|), upper bits zero,
// in raster order: (width-2)*(height-2) words per job, exactly `spork_golden::sobel::sobel`. TLAST
// marks the job's last output word. A job smaller than 3x3 produces no output.
//
// The kernel takes a pixel every cycle and cannot stall; its output appears LAT = 3 cycles after the
// pixel. The wrapper therefore buffers outputs in a DEPTH-entry FIFO and only accepts a word while
// the FIFO has room for everything that could still arrive (see `credit` below). A stalled consumer
// stalls the input; it never drops an output.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the kernel's registers start
// from their initial values when the xclbin is loaded, and each job restarts its counters
// (in_first), so a reset between jobs is clean.

`default_nettype none

module sobel_axis (
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
    localparam integer LAT = 3;  // kernel pixel-to-output latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, magnitude}; async-read distributed RAM.
    reg  [8:0] fifo_mem[0:DEPTH-1];
    reg  [2:0] wr_ptr;
    reg  [2:0] rd_ptr;
    reg  [3:0] count;
    wire       k_out_valid;
    wire [7:0] k_out_mag;
    reg  [LAT-1:0] last_pipe;  // "this was the job's last pixel", aligned with the kernel's latency
    wire       push = k_out_valid & ap_rst_n;
    wire       pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = {56'd0, fifo_mem[rd_ptr][7:0]};
    assign m_axis_tlast = fifo_mem[rd_ptr][8];

    // Credit: an accepted word's output lands in the FIFO LAT cycles later, and at most one output
    // lands per cycle, so the count can grow by at most LAT + 1 from now until then. Accepting only
    // while count <= DEPTH - 1 - LAT therefore never overflows, whatever the consumer does.
    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing: the first word of each job is the width.
    reg       want_width;
    reg       first;  // the next pixel is the job's first
    reg [8:0] width;

    assign s_axis_tready = ap_rst_n & credit;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire pixel = accept & ~want_width;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            want_width <= 1'b1;
            first <= 1'b0;
            width <= 9'd0;
        end else if (accept) begin
            if (want_width) begin
                width <= s_axis_tdata[8:0];
                first <= 1'b1;
                // A job of just a width word has no pixels: the next word is a width again.
                want_width <= s_axis_tlast;
            end else begin
                first <= 1'b0;
                want_width <= s_axis_tlast;
            end
        end
    end

    always @(posedge ap_clk) begin
        last_pipe <= {last_pipe[LAT-2:0], pixel & s_axis_tlast};
        if (push) fifo_mem[wr_ptr] <= {last_pipe[LAT-1], k_out_mag};
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

    // `width` is a register written only by a job's first word, so it is steady for the whole image.
    sobel kernel (
        .clock(ap_clk),
        .width(width),
        .in_valid(pixel),
        .in_first(first),
        .in_pixel(s_axis_tdata[7:0]),
        .out_valid(k_out_valid),
        .out_mag(k_out_mag)
    );
endmodule

`default_nettype wire
