// bloom_stream: the generated `bloom` kernel (rtl/bloom.v, from hdl/src/kernels/bloom.rs) behind the
// model repository's stream convention (docs/model-repository.md): one 32-bit term hash per beat in
// s_axis_tdata[31:0], TLAST on each document's last term; one score per document out in
// m_axis_tdata[15:0] (TLAST high on every beat: each ends its row).
//
// After reset the wrapper loads the profile (rtl/bloom_profile.v, generated from seed 0: the state
// the CPU code's cpu/profile.h holds too) into the kernel a bit per cycle, 1024 cycles with
// s_axis_tready low; then terms stream one per cycle. The kernel cannot stall and a score appears
// LAT = 2 cycles after its document's last term, so scores go through a DEPTH-entry FIFO and a term
// is accepted only while the FIFO has room for everything that could still arrive (`credit`).
// ap_rst_n is synchronous and active low.

`default_nettype none

module bloom_stream (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    input  wire [31:0] s_axis_tdata,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [15:0] m_axis_tdata,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast
);
    localparam integer LAT = 2;  // kernel last-term-to-score latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO of scores.
    reg  [15:0] fifo_mem[0:DEPTH-1];
    reg   [2:0] wr_ptr;
    reg   [2:0] rd_ptr;
    reg   [3:0] count;
    wire        k_out_valid;
    wire [15:0] k_out_score;
    wire        push = k_out_valid & ap_rst_n;
    wire        pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = fifo_mem[rd_ptr];
    assign m_axis_tlast = 1'b1;

    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- The profile loader: bit `load` of the profile each cycle until all 1024 are in.
    reg  [10:0] load;  // next bit to write; 1024 when done
    wire        loading = ~load[10];
    wire        profile_bit;

    bloom_profile profile (
        .addr(load[9:0]),
        .bit_out(profile_bit)
    );

    assign s_axis_tready = ap_rst_n & ~loading & credit;
    wire accept = s_axis_tvalid & s_axis_tready;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) load <= 11'd0;
        else if (loading) load <= load + 11'd1;
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
        .load_we(loading & ap_rst_n),
        .load_addr(load[9:0]),
        .load_bit(profile_bit),
        .in_valid(accept),
        .in_last(s_axis_tlast),
        .in_hash(s_axis_tdata),
        .out_valid(k_out_valid),
        .out_score(k_out_score)
    );
endmodule

`default_nettype wire
