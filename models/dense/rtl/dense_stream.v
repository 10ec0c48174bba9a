// dense_stream: the generated `dense` kernel (rtl/dense.v, from hdl/src/kernels/dense.rs) behind the
// model repository's stream convention (docs/model-repository.md): one int16 input element per beat
// in s_axis_tdata[15:0], TLAST on each vector's last (64th) element; each vector's eight outputs
// leave as eight beats, neuron 0 first, in m_axis_tdata[15:0] (TLAST on the eighth).
//
// After reset the wrapper writes the layer's 512 weights (rtl/dense_weights.v, generated from seed
// 0: the state the CPU code's cpu/weights.h holds too) into the kernel one per cycle, with
// s_axis_tready low; then elements stream one per cycle. The kernel cannot stall and a vector's
// outputs appear together LAT = 2 cycles after its last element, so they go into a DEPTH-entry FIFO
// of eight-output entries drained a beat per cycle, and an element is accepted only while the FIFO
// has room for everything that could still arrive (`credit`). ap_rst_n is synchronous, active low.

`default_nettype none

module dense_stream (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    input  wire [15:0] s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [15:0] m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    localparam integer LAT = 2;  // kernel last-element-to-output latency, cycles
    localparam integer DEPTH = 4;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: y7..y0 per entry, read out a neuron per beat.
    reg [127:0] fifo_mem[0:DEPTH-1];
    reg   [1:0] wr_ptr;
    reg   [1:0] rd_ptr;
    reg   [2:0] count;
    reg   [2:0] neuron;  // which output of the head entry goes out next
    wire        k_out_valid;
    wire [15:0] y0, y1, y2, y3, y4, y5, y6, y7;
    wire        push = k_out_valid & ap_rst_n;
    wire        pop_beat = m_axis_tvalid & m_axis_tready;
    wire        pop = pop_beat & (neuron == 3'd7);  // the head entry's last output leaves
    wire [127:0] head = fifo_mem[rd_ptr];

    assign m_axis_tvalid = (count != 3'd0);
    assign m_axis_tdata = head[neuron * 16 +: 16];
    assign m_axis_tlast = (neuron == 3'd7);

    wire credit = ({29'd0, count} <= DEPTH - 1 - LAT);

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
            wr_ptr <= 2'd0;
            rd_ptr <= 2'd0;
            count <= 3'd0;
            neuron <= 3'd0;
        end else begin
            if (push) wr_ptr <= wr_ptr + 2'd1;
            if (pop_beat) neuron <= neuron + 3'd1;
            if (pop) rd_ptr <= rd_ptr + 2'd1;
            count <= count + {2'd0, push} - {2'd0, pop};
        end
    end

    // rust-hdl names the output array's ports out_y$0..out_y$7: plain Verilog identifiers ($ is
    // legal after the first character), so they connect by name without escaping.
    dense kernel (
        .clock(ap_clk),
        .w_we(loading & ap_rst_n),
        .w_neuron(load[8:6]),
        .w_index(load[5:0]),
        .w_data(weight),
        .in_valid(accept),
        .in_last(s_axis_tlast),
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
