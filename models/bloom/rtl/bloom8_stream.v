// bloom8_stream: the generated `bloom8` kernel (rtl/bloom8.v, from hdl/src/kernels/bloom8.rs) behind
// the model repository's stream convention at eight lanes (docs/model-repository.md): a beat is up
// to eight 32-bit term hashes of one document in s_axis_tdata (lane k in bits 32k+31:32k), each
// document starting a new beat, s_axis_tkeep marking the lanes its last beat fills, TLAST on that
// beat. Out, the request's scores eight to a beat (lane k in m_axis_tdata bits 16k+15:16k), the last
// beat's lanes on m_axis_tkeep and TLAST on it. The request's document count is the scalar port
// `docs`, set from D before its stream and held through it: it says when the last, partial output
// beat is complete.
//
// After reset the wrapper loads the profile (rtl/bloom_profile.v, seed 0, as the CPU code's
// cpu/profile.h) into the kernel a bit per cycle, 1024 cycles with s_axis_tready low. The kernel
// cannot stall and a score appears LAT = 2 cycles after its document's last beat; scores are packed
// into output beats that go through a DEPTH-entry FIFO, and a beat is accepted only while the FIFO
// has room for every score still in flight (`credit`). ap_rst_n is synchronous and active low.

`default_nettype none

module bloom8_stream (
    input  wire         ap_clk,
    input  wire         ap_rst_n,
    input  wire [16:0]  docs,
    input  wire [255:0] s_axis_tdata,
    input  wire [7:0]   s_axis_tkeep,
    input  wire         s_axis_tvalid,
    output wire         s_axis_tready,
    input  wire         s_axis_tlast,
    output wire [127:0] m_axis_tdata,
    output wire [7:0]   m_axis_tkeep,
    output wire         m_axis_tvalid,
    input  wire         m_axis_tready,
    output wire         m_axis_tlast
);
    localparam integer LAT = 2;  // kernel last-beat-to-score latency, cycles
    localparam integer DEPTH = 8;  // output FIFO entries (a power of two, > LAT)

    // ---- Output FIFO: {tlast, tkeep, tdata}.
    reg  [136:0] fifo_mem[0:DEPTH-1];
    reg    [2:0] wr_ptr;
    reg    [2:0] rd_ptr;
    reg    [3:0] count;
    wire         k_out_valid;
    wire  [15:0] k_out_score;
    wire         pop = m_axis_tvalid & m_axis_tready;

    assign m_axis_tvalid = (count != 4'd0);
    assign m_axis_tdata = fifo_mem[rd_ptr][127:0];
    assign m_axis_tkeep = fifo_mem[rd_ptr][135:128];
    assign m_axis_tlast = fifo_mem[rd_ptr][136];

    wire credit = ({28'd0, count} <= DEPTH - 1 - LAT);

    // ---- The packer: score `doc` of the request goes to lane `lane` of the beat being filled; the
    // beat is pushed when its eighth lane fills or the request's last score arrives.
    reg  [127:0] pack;
    reg    [2:0] lane;
    reg   [16:0] doc;
    wire         final_doc = (doc + 17'd1 == docs);
    wire         score_in = k_out_valid & ap_rst_n;
    wire         push = score_in & ((lane == 3'd7) | final_doc);
    wire [127:0] packed_beat = pack | ({112'd0, k_out_score} << {lane, 4'd0});
    wire   [7:0] keep = 8'hff >> (3'd7 - lane);

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            pack <= 128'd0;
            lane <= 3'd0;
            doc <= 17'd0;
        end else if (score_in) begin
            pack <= push ? 128'd0 : packed_beat;
            lane <= push ? 3'd0 : lane + 3'd1;
            doc <= final_doc ? 17'd0 : doc + 17'd1;
        end
    end

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
        if (push) fifo_mem[wr_ptr] <= {final_doc, keep, packed_beat};
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

    bloom8 kernel (
        .clock(ap_clk),
        .load_we(loading & ap_rst_n),
        .load_addr(load[9:0]),
        .load_bit(profile_bit),
        .in_valid(accept),
        .in_last(s_axis_tlast),
        .in_keep(s_axis_tkeep),
        .in_hashes(s_axis_tdata),
        .out_valid(k_out_valid),
        .out_score(k_out_score)
    );
endmodule

`default_nettype wire
