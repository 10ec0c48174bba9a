// dense32_stream: the generated `dense32` kernel (rtl/dense32.v, from hdl/src/kernels/dense32.rs)
// behind the model repository's stream convention at 32 lanes (docs/model-repository.md): a beat is
// up to 32 int16 elements of one vector in s_axis_tdata (lane k in bits 16k+15:16k), each vector
// starting a new beat, s_axis_tkeep marking the lanes its last beat fills, TLAST on that beat. Out,
// each vector's eight outputs as one beat, neuron j in m_axis_tdata bits 16j+15:16j (the upper 24
// lanes zero), m_axis_tkeep = 8'hff in its 32 bits, TLAST on every beat (each ends its row).
//
// After reset the wrapper writes the layer's 512 weights (rtl/dense_weights.v, seed 0, as the CPU
// code's cpu/weights.h) into the kernel one per cycle, with s_axis_tready low. The kernel cannot
// stall and a vector's outputs appear LAT = 3 cycles after its last beat, so they go through a
// DEPTH-entry FIFO, and a beat is accepted only while the FIFO has room for every vector still in
// flight (`credit`). ap_rst_n is synchronous and active low.

`default_nettype none

module dense32_stream (
    input  wire         ap_clk,
    input  wire         ap_rst_n,
    input  wire [511:0] s_axis_tdata,
    input  wire [31:0]  s_axis_tkeep,
    input  wire         s_axis_tvalid,
    output wire         s_axis_tready,
    input  wire         s_axis_tlast,
    output wire [511:0] m_axis_tdata,
    output wire [31:0]  m_axis_tkeep,
    output wire         m_axis_tvalid,
    input  wire         m_axis_tready,
    output wire         m_axis_tlast
);
    localparam integer LAT = 3;  // kernel last-beat-to-output latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO of y7..y0.
    reg  [127:0] fifo_mem[0:DEPTH-1];
    reg    [2:0] wr_ptr;
    reg    [2:0] rd_ptr;
    reg    [3:0] count;
    wire         k_out_valid;
    wire  [15:0] y0, y1, y2, y3, y4, y5, y6, y7;
    wire         push = k_out_valid & ap_rst_n;
    wire         pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = {384'd0, fifo_mem[rd_ptr]};
    assign m_axis_tkeep = 32'h0000_00ff;
    assign m_axis_tlast = 1'b1;

    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- The weight loader: weight `load` (neuron load / 64, input load % 64) each cycle.
    reg  [9:0] load;  // next weight to write; 512 when done
    wire       loading = ~load[9];
    wire [15:0] weight;

    dense_weights weights (
        .index(load[8:0]),
        .weight(weight)
    );

    assign s_axis_tready = ap_rst_n & ~loading & credit;
    wire accept = s_axis_tvalid & s_axis_tready;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) load <= 10'd0;
        else if (loading) load <= load + 10'd1;
    end

    always @(posedge ap_clk) begin
        if (push) fifo_mem[wr_ptr] <= {y7, y6, y5, y4, y3, y2, y1, y0};
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

    // rust-hdl names the output array's ports out_y$0..out_y$7 (see rtl/dense_stream.v).
    dense32 kernel (
        .clock(ap_clk),
        .w_we(loading & ap_rst_n),
        .w_neuron(load[8:6]),
        .w_index(load[5:0]),
        .w_data(weight),
        .in_valid(accept),
        .in_last(s_axis_tlast),
        .in_keep(s_axis_tkeep),
        .in_x(s_axis_tdata),
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
