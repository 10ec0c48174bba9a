// sobel_stream: the generated `sobel` kernel (rtl/sobel.v, from hdl/src/kernels/sobel.rs) behind
// the model repository's stream convention (docs/model-repository.md): one pixel per beat in
// s_axis_tdata[7:0], raster order, TLAST on the request's last pixel; one magnitude per beat out in
// m_axis_tdata[7:0], raster order over the interior pixels, TLAST on the request's last. The image
// width is the scalar port `width`, set from the request's W before its stream and held through it.
//
// The kernel takes a pixel every cycle and cannot stall; its output appears LAT = 3 cycles after the
// pixel. Outputs therefore go through a DEPTH-entry FIFO, and a pixel is accepted only while the
// FIFO has room for everything that could still arrive (`credit`), so a stalled consumer stalls
// the input and no output is dropped. ap_rst_n (synchronous, active low) resets the wrapper; the
// kernel's counters restart on each request's first pixel (in_first).

`default_nettype none

module sobel_stream (
    input  wire       ap_clk,
    input  wire       ap_rst_n,
    input  wire [8:0] width,
    input  wire [7:0] s_axis_tdata,
    input  wire       s_axis_tvalid,
    output wire       s_axis_tready,
    input  wire       s_axis_tlast,
    output wire [7:0] m_axis_tdata,
    output wire       m_axis_tvalid,
    input  wire       m_axis_tready,
    output wire       m_axis_tlast
);
    localparam integer LAT = 3;  // kernel pixel-to-output latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, magnitude}.
    reg  [8:0] fifo_mem[0:DEPTH-1];
    reg  [2:0] wr_ptr;
    reg  [2:0] rd_ptr;
    reg  [3:0] count;
    wire       k_out_valid;
    wire [7:0] k_out_mag;
    reg  [LAT-1:0] last_pipe;  // "this was the request's last pixel", aligned with the latency
    wire       push = k_out_valid & ap_rst_n;
    wire       pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = fifo_mem[rd_ptr][7:0];
    assign m_axis_tlast = fifo_mem[rd_ptr][8];

    // An accepted pixel's output lands LAT cycles later and at most one lands per cycle: accepting
    // only while count <= DEPTH - 1 - LAT never overflows, whatever the consumer does.
    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    reg  first;  // the next pixel is a request's first
    assign s_axis_tready = ap_rst_n & credit;
    wire accept = s_axis_tvalid & s_axis_tready;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) first <= 1'b1;
        else if (accept) first <= s_axis_tlast;
    end

    always @(posedge ap_clk) begin
        last_pipe <= {last_pipe[LAT-2:0], accept & s_axis_tlast};
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

    sobel kernel (
        .clock(ap_clk),
        .width(width),
        .in_valid(accept),
        .in_first(first),
        .in_pixel(s_axis_tdata),
        .out_valid(k_out_valid),
        .out_mag(k_out_mag)
    );
endmodule

`default_nettype wire
