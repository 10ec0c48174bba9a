// {{name}}: the FPGA implementation, a Vitis-style RTL kernel (ap_ctrl_none) with one AXI4-Stream
// in and one out, in Spork's stream convention (see README.md and docs/model-repository.md).
//
// The skeleton adds one to each UINT32 element of `x`, giving `y`, LANES elements per beat
// (model.toml's [fpga.sim] lanes; `spork kernel new --lanes N` sets both):
//
//   in:  s_axis_tdata[32k+31:32k] = x[i+k] for lane k; s_axis_tkeep[k] = lane k holds an element
//        (a row starts a new beat, so only a row's last beat can be partial); s_axis_tlast on each
//        row's last beat
//   out: m_axis_tdata[32k+31:32k] = y[i+k] = x[i+k] + 1 (modulo 2^32); TKEEP and TLAST carried
//        through with their beat
//
// Inputs are packed from bit 0 up in model.toml's [[input]] order, each at its datatype's width,
// one such group per lane, outputs likewise from its [[output]]s: widen s_axis_tdata /
// m_axis_tdata when you add tensors.
//
// The handshake: a beat moves when TVALID and TREADY are both high on a rising edge of ap_clk. This
// kernel is one register stage: it takes a new beat whenever its output register is empty or is
// being emptied this cycle (s_axis_tready = !m_axis_tvalid || m_axis_tready), and holds its output
// steady while the consumer stalls. `spork kernel check` stalls m_axis_tready at random, so keep
// that rule if you add stages (each stage: ready = !valid || next_ready). ap_rst_n is synchronous
// and active low.

`default_nettype none

module {{name}} #(
    parameter integer LANES = {{lanes}}
) (
    input  wire                  ap_clk,
    input  wire                  ap_rst_n,
    input  wire [32*LANES-1:0]   s_axis_tdata,
    input  wire [LANES-1:0]      s_axis_tkeep,
    input  wire                  s_axis_tvalid,
    output wire                  s_axis_tready,
    input  wire                  s_axis_tlast,
    output wire [32*LANES-1:0]   m_axis_tdata,
    output wire [LANES-1:0]      m_axis_tkeep,
    output wire                  m_axis_tvalid,
    input  wire                  m_axis_tready,
    output wire                  m_axis_tlast
);
    reg                out_valid;  // the output register holds a beat not yet taken
    reg [32*LANES-1:0] out_data;
    reg [LANES-1:0]    out_keep;
    reg                out_last;

    assign s_axis_tready = ap_rst_n && (!out_valid || m_axis_tready);
    assign m_axis_tvalid = out_valid;
    assign m_axis_tdata = out_data;
    assign m_axis_tkeep = out_keep;
    assign m_axis_tlast = out_last;

    wire accept = s_axis_tvalid && s_axis_tready;  // a beat moves in this cycle

    // ---- YOUR LOGIC: compute each lane's output element from its input element. Replace this
    // expression (and widen the ports) with your own. Anything that takes more than one cycle needs
    // more register stages, each with its own valid bit and the ready rule above. Lanes past a
    // row's end (TKEEP low) hold zeros; what you compute there is dropped.
    wire [32*LANES-1:0] result;
    genvar k;
    generate
        for (k = 0; k < LANES; k = k + 1) begin : lane
            assign result[32*k+:32] = s_axis_tdata[32*k+:32] + 32'd1;
        end
    endgenerate

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            out_valid <= 1'b0;
        end else if (accept) begin
            out_valid <= 1'b1;  // a new beat replaces the one taken this cycle, if any
        end else if (m_axis_tready) begin
            out_valid <= 1'b0;  // taken, nothing new
        end
    end

    // Data registers need no reset: they are only read while out_valid is high.
    always @(posedge ap_clk) begin
        if (accept) begin
            out_data <= result;
            out_keep <= s_axis_tkeep;
            out_last <= s_axis_tlast;
        end
    end
endmodule

`default_nettype wire
