// Smoke test of the three stream wrappers under Icarus Verilog, in the word layout of
// host/src/runtime/stream.rs, against reference models written here from the `spork_golden`
// definitions. Each job is one transfer (TLAST on its last word); random gaps on the input (TVALID)
// and random and long stalls on the output (TREADY) exercise the framing, the credit rule and the
// output FIFOs.
//   iverilog -g2005 -o /tmp/axis_tb bitstreams/sim/{sobel,bloom,dense}.v \
//       scripts/vitis/{sobel,bloom,dense}_axis.v scripts/vitis/axis_tb.v && vvp -n /tmp/axis_tb
// Prints one PASS line per kernel; `$fatal`s on the first mismatch or a hang.

module axis_tb_one #(
    parameter integer KERNEL = 0,  // 0 sobel, 1 bloom, 2 dense
    parameter integer SEED = 1
) (
    output reg done
);
    localparam integer NIN = 16384;
    localparam integer NOUT = 4096;

    reg         clk = 1'b0;
    reg         rst_n = 1'b0;
    reg  [63:0] s_tdata;
    reg         s_tvalid;
    reg         s_tlast;
    wire        s_tready;
    wire [63:0] m_tdata;
    wire        m_tvalid;
    reg         m_tready;
    wire        m_tlast;

    always #2 clk = ~clk;

    generate
        if (KERNEL == 0) begin : g_dut
            sobel_axis dut (
                .ap_clk(clk), .ap_rst_n(rst_n),
                .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready),
                .s_axis_tlast(s_tlast),
                .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(m_tready),
                .m_axis_tlast(m_tlast)
            );
        end else if (KERNEL == 1) begin : g_dut
            bloom_axis dut (
                .ap_clk(clk), .ap_rst_n(rst_n),
                .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready),
                .s_axis_tlast(s_tlast),
                .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(m_tready),
                .m_axis_tlast(m_tlast)
            );
        end else begin : g_dut
            dense_axis dut (
                .ap_clk(clk), .ap_rst_n(rst_n),
                .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready),
                .s_axis_tlast(s_tlast),
                .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(m_tready),
                .m_axis_tlast(m_tlast)
            );
        end
    endgenerate

    // Stimulus and expected output ({tlast, tdata}), built before reset is released.
    reg [64:0] in_words[0:NIN-1];
    reg [64:0] exp_words[0:NOUT-1];
    integer n_in = 0;
    integer n_out = 0;
    integer seed = SEED;

    task put(input last, input [63:0] w);
        begin
            in_words[n_in] = {last, w};
            n_in = n_in + 1;
        end
    endtask

    task expect_word(input last, input [63:0] w);
        begin
            exp_words[n_out] = {last, w};
            n_out = n_out + 1;
        end
    endtask

    // Marks the most recent output word as the job's last (TLAST).
    task end_job_output;
        begin
            if (n_out > 0) exp_words[n_out-1][64] = 1'b1;
        end
    endtask

    // ---- sobel: interior |Gx| + |Gy| saturated to 255, raster order. Bits above a field are
    // filled with noise: the wrapper must ignore them.
    reg [7:0] img[0:256*8-1];
    task sobel_job(input integer w, input integer h);
        integer r, c, gx, gy, m;
        begin
            put(h == 0, {$random(seed), 32'd0} | w);
            for (r = 0; r < h; r = r + 1)
                for (c = 0; c < w; c = c + 1) begin
                    // Mostly smooth ramps with occasional jumps, so both exact and saturated values occur.
                    img[r*w+c] = ($random(seed) & 3) == 0 ? $random(seed) : (r * 7 + c * 3) & 8'hff;
                    put(r == h - 1 && c == w - 1, {$random(seed), 24'd0, img[r*w+c]});
                end
            for (r = 1; r < h - 1; r = r + 1)
                for (c = 1; c < w - 1; c = c + 1) begin
                    gx = (img[(r-1)*w+c+1] + 2 * img[r*w+c+1] + img[(r+1)*w+c+1])
                       - (img[(r-1)*w+c-1] + 2 * img[r*w+c-1] + img[(r+1)*w+c-1]);
                    gy = (img[(r+1)*w+c-1] + 2 * img[(r+1)*w+c] + img[(r+1)*w+c+1])
                       - (img[(r-1)*w+c-1] + 2 * img[(r-1)*w+c] + img[(r-1)*w+c+1]);
                    m = (gx < 0 ? -gx : gx) + (gy < 0 ? -gy : gy);
                    expect_word(r == h - 2 && c == w - 2, m > 255 ? 255 : m);
                end
        end
    endtask

    // ---- bloom: a term matches when the profile bits of its three 10-bit fields are all set.
    reg [1023:0] profile;
    task bloom_profile(input last);
        integer i;
        reg [63:0] word;
        begin
            for (i = 0; i < 16; i = i + 1) begin
                word = {$random(seed) | $random(seed), $random(seed) | $random(seed)};  // ~75% set
                profile[64*i+:64] = word;
                put(last && i == 15, word);
            end
        end
    endtask
    task bloom_document(input integer n, input job_last);
        integer i, score;
        reg [31:0] hash;
        begin
            score = 0;
            for (i = 0; i < n; i = i + 1) begin
                hash = $random(seed);
                put(job_last && i == n - 1, {31'd0, i == n - 1, hash});
                if (profile[hash[9:0]] && profile[hash[19:10]] && profile[hash[29:20]]) score = score + 1;
            end
            expect_word(1'b0, score & 16'hffff);
        end
    endtask

    // ---- dense: 8 dot products, ReLU, >> 8, saturate to int16.
    reg signed [15:0] weights[0:511];
    task dense_weights(input integer scale, input last);
        integer i;
        reg [63:0] word;
        begin
            for (i = 0; i < 512; i = i + 1) begin
                weights[i] = $random(seed) % scale;
                word[16*(i%4)+:16] = weights[i];
                if (i % 4 == 3) put(last && i == 511, word);
            end
        end
    endtask
    task dense_vector(input integer n, input job_last);
        integer i, j;
        reg signed [15:0] x[0:63];
        reg signed [63:0] acc;
        reg [15:0] y[0:7];
        begin
            for (i = 0; i < n; i = i + 1) begin
                x[i] = $random(seed);
                put(job_last && i == n - 1, {47'd0, i == n - 1, x[i]});
            end
            for (j = 0; j < 8; j = j + 1) begin
                acc = 0;
                for (i = 0; i < n; i = i + 1) acc = acc + x[i] * weights[j*64+i];
                y[j] = acc < 0 ? 16'd0 : ((acc >>> 8) > 64'sd32767 ? 16'h7fff : acc[23:8]);
            end
            expect_word(1'b0, {y[3], y[2], y[1], y[0]});
            expect_word(1'b0, {y[7], y[6], y[5], y[4]});
        end
    endtask

    integer i_in, i_out, cycles, k, stall;
    initial begin
        done = 1'b0;
        s_tvalid = 1'b0;
        s_tdata = 64'd0;
        s_tlast = 1'b0;
        m_tready = 1'b0;
        if (KERNEL == 0) begin
            sobel_job(5, 4);
            sobel_job(3, 3);
            sobel_job(7, 0);  // a width word alone: no output, and the next job starts clean
            sobel_job(17, 6);
            sobel_job(256, 3);
            sobel_job(4, 8);
        end else if (KERNEL == 1) begin
            bloom_profile(0);
            bloom_document(1, 0);
            bloom_document(1, 0);
            bloom_document(5, 0);
            bloom_document(40, 1);
            end_job_output;
            bloom_profile(1);  // a profile alone: no output
            bloom_profile(0);
            bloom_document(2, 0);
            bloom_document(300, 0);
            bloom_document(1, 1);
            end_job_output;
            bloom_profile(0);
            for (k = 0; k < 40; k = k + 1) bloom_document(1, k == 39);  // a score per cycle
            end_job_output;
        end else begin
            dense_weights(1024, 0);
            dense_vector(1, 0);
            dense_vector(2, 0);
            dense_vector(3, 0);
            dense_vector(64, 0);
            dense_vector(7, 1);
            end_job_output;
            dense_weights(32768, 1);  // weights alone: no output
            dense_weights(32768, 0);  // large weights: saturation and ReLU both occur
            dense_vector(64, 0);
            dense_vector(5, 0);
            dense_vector(4, 1);
            end_job_output;
            dense_weights(512, 0);
            for (k = 0; k < 12; k = k + 1) dense_vector(1 + k % 2, k == 11);  // 2 words out per 1-2 in
            end_job_output;
        end
        repeat (20) @(posedge clk);
        rst_n <= 1'b1;
    end

    // Source: present words with random gaps; advance on handshake.
    always @(posedge clk) begin
        if (!rst_n) begin
            i_in = 0;
            s_tvalid <= 1'b0;
        end else begin
            if (s_tvalid && s_tready) i_in = i_in + 1;
            if (i_in < n_in && (!s_tvalid || s_tready ? ($random(seed) & 3) != 0 : 1'b1)) begin
                s_tvalid <= 1'b1;
                {s_tlast, s_tdata} <= in_words[i_in];
            end else if (s_tvalid && s_tready) begin
                s_tvalid <= 1'b0;
            end
        end
    end

    // Sink: random stalls, plus 30 stalled cycles after every 10th word so the FIFO fills while
    // input still flows; compares every word.
    always @(posedge clk) begin
        if (!rst_n) begin
            i_out = 0;
            cycles = 0;
            stall = 0;
        end else begin
            cycles = cycles + 1;
            if (m_tvalid && m_tready) begin
                if (i_out >= n_out) $fatal(1, "kernel %0d: unexpected output word %h", KERNEL, m_tdata);
                if ({m_tlast, m_tdata} !== exp_words[i_out])
                    $fatal(1, "kernel %0d: word %0d is {last %b, %h}, expected {last %b, %h}",
                           KERNEL, i_out, m_tlast, m_tdata, exp_words[i_out][64], exp_words[i_out][63:0]);
                i_out = i_out + 1;
            end
            if (stall != 0) stall = stall - 1;
            else if (m_tvalid && m_tready && i_out % 10 == 0) stall = 30;
            m_tready <= stall == 0 && ($random(seed) & 3) != 0;
            if (i_out == n_out && i_in == n_in && !done) begin
                $display("PASS kernel %0d: %0d words in, %0d words out, %0d cycles", KERNEL, n_in, n_out,
                         cycles);
                done = 1'b1;
            end
            if (!done && cycles > 200000) $fatal(1, "kernel %0d: timeout at word %0d of %0d in, %0d of %0d out",
                                       KERNEL, i_in, n_in, i_out, n_out);
        end
    end
endmodule

module axis_tb;
    wire [2:0] done;
    axis_tb_one #(.KERNEL(0), .SEED(11)) t_sobel (.done(done[0]));
    axis_tb_one #(.KERNEL(1), .SEED(22)) t_bloom (.done(done[1]));
    axis_tb_one #(.KERNEL(2), .SEED(33)) t_dense (.done(done[2]));
    initial begin
        wait (&done);
        #20 $finish;
    end
endmodule
