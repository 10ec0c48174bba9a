// sobel_axis: the generated `sobel` kernel (bitstreams/sim/sobel.v) as a free-running Vitis RTL
// kernel (ap_ctrl_none) with one AXI4-Stream in and one out, 32-bit words.
//
// Input stream: a sequence of images, each one header word followed by its pixels.
//   header: [8:0] width (3..256), [31:16] height (>= 3); bits [15:9] are reserved.
//   pixel:  [7:0] gray level, one pixel per word, raster order, width*height words.
// The wrapper frames images by these counts, not by TLAST: the data mover sets TLAST only at the end
// of a transfer, and a transfer may hold several images (s_axis_tlast is ignored).
//
// Output stream: one word per interior pixel (row and column >= 1 and < size - 1), [7:0] the
// magnitude min(255, |Gx| + |Gy|), upper bits zero, in raster order: (width-2)*(height-2) words per
// image, exactly `spork_golden::sobel::sobel`. TLAST marks each image's last output word. An image
// smaller than 3x3 produces no output (and so no TLAST).
//
// The kernel takes a pixel every cycle and cannot stall; its output appears LAT = 3 cycles after the
// pixel. The wrapper therefore buffers outputs in a DEPTH-entry FIFO and only accepts a word while
// the FIFO has room for everything that could still arrive (see `credit` below). A stalled consumer
// stalls the input; it never drops an output.
//
// ap_rst_n resets the wrapper (framing state, FIFO), not the kernel: the kernel's registers start
// from their initial values when the xclbin is loaded, and each image restarts its counters
// (in_first), so a reset between images is clean.

`default_nettype none

module sobel_axis (
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
    localparam integer LAT = 3;  // kernel pixel-to-output latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, magnitude}; async-read distributed RAM.
    reg  [8:0] fifo_mem[0:DEPTH-1];
    reg  [2:0] wr_ptr;
    reg  [2:0] rd_ptr;
    reg  [3:0] count;
    wire       k_out_valid;
    wire [7:0] k_out_mag;
    reg  [LAT-1:0] last_pipe;  // "this was the image's last pixel", aligned with the kernel's latency
    wire       push = k_out_valid & ap_rst_n;
    wire       pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = {24'd0, fifo_mem[rd_ptr][7:0]};
    assign m_axis_tlast = fifo_mem[rd_ptr][8];

    // Credit: an accepted word's output lands in the FIFO LAT cycles later, and at most one output
    // lands per cycle, so the count can grow by at most LAT + 1 from now until then. Accepting only
    // while count <= DEPTH - 1 - LAT therefore never overflows, whatever the consumer does.
    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- Input framing.
    reg        want_header;  // the next word is an image header
    reg        first;  // the next pixel is the image's first
    reg  [8:0] width;
    reg [15:0] height;
    reg  [8:0] col;
    reg [15:0] row;

    assign s_axis_tready = ap_rst_n & credit;
    wire accept = s_axis_tvalid & s_axis_tready;
    wire pixel = accept & ~want_header;
    wire last_col = (col == width - 9'd1);
    wire last_pixel = last_col & (row == height - 16'd1);

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            want_header <= 1'b1;
            first <= 1'b0;
            width <= 9'd0;
            height <= 16'd0;
            col <= 9'd0;
            row <= 16'd0;
        end else if (accept) begin
            if (want_header) begin
                width <= s_axis_tdata[8:0];
                height <= s_axis_tdata[31:16];
                col <= 9'd0;
                row <= 16'd0;
                first <= 1'b1;
                want_header <= 1'b0;
            end else begin
                first <= 1'b0;
                if (last_col) begin
                    col <= 9'd0;
                    row <= row + 16'd1;
                    if (last_pixel) want_header <= 1'b1;
                end else begin
                    col <= col + 9'd1;
                end
            end
        end
    end

    always @(posedge ap_clk) begin
        last_pipe <= {last_pipe[LAT-2:0], pixel & last_pixel};
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

    // `width` is a register written only by a header, so it is steady for the whole image.
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
