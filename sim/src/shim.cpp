// The C ABI of one Verilated model, included at the end of the model's single translation unit.
// The unit defines SPORK_MODEL (the Verilator class), SPORK_SYMS (its symbol table, which holds
// the design's registers and memories), SPORK_MODEL_NAME, SPORK_PORT_COUNT and
// SPORK_PORTS(X), one X(index, member, "name", width, is_input) per port, read from the header.
// Each instance owns its VerilatedContext, so instances on different threads share no state.
#include <cstdint>
#include <exception>
#include <string>

namespace {
struct Instance {
    VerilatedContext context;
    SPORK_MODEL top;
    // Set once a $stop, $fatal or runtime error threw out of the design (see fatal.cpp): the
    // instance is then dead, and every call returns at once.
    std::string failed;
    Instance() : context(), top(&context, "top") {}
};

struct PortInfo {
    const char* name;
    uint32_t width;
    int input;
};

#define SPORK_PORT_INFO(i, member, name, width, input) {name, width, input},
const PortInfo kPorts[SPORK_PORT_COUNT] = {SPORK_PORTS(SPORK_PORT_INFO)};
// A port's value as 64-bit words (bit 0 in word 0), whatever Verilator's type for it: CData..QData
// for ports of up to 64 bits, VlWide (32-bit words) past that. Bits above the port's width are
// cleared, as Verilator expects.
template <typename T>
void put(T& member, const uint64_t* w, uint32_t width) {
    const uint64_t mask = width >= 64 ? ~0ull : (1ull << width) - 1;
    member = static_cast<T>(w[0] & mask);
}
template <std::size_t N>
void put(VlWide<N>& member, const uint64_t* w, uint32_t width) {
    for (std::size_t i = 0; i < N; ++i) member.at(i) = static_cast<EData>(w[i / 2] >> (32 * (i % 2)));
    if (width % 32 != 0) member.at(N - 1) &= (1u << (width % 32)) - 1;
}
template <typename T>
void take(const T& member, uint64_t* w) {
    w[0] = static_cast<uint64_t>(member);
}
template <std::size_t N>
void take(const VlWide<N>& member, uint64_t* w) {
    for (std::size_t i = 0; i < (N + 1) / 2; ++i) w[i] = 0;
    for (std::size_t i = 0; i < N; ++i) w[i / 2] |= static_cast<uint64_t>(member.at(i)) << (32 * (i % 2));
}

template <typename T>
void put1(T& member, uint64_t v, uint32_t width) {
    put(member, &v, width);
}
template <std::size_t N>
void put1(VlWide<N>& member, uint64_t v, uint32_t width) {
    uint64_t w[(N + 1) / 2] = {v};
    put(member, w, width);
}
template <typename T>
uint64_t take1(const T& member) {
    return static_cast<uint64_t>(member);
}
template <std::size_t N>
uint64_t take1(const VlWide<N>& member) {
    return static_cast<uint64_t>(member.at(0)) | (N > 1 ? static_cast<uint64_t>(member.at(1)) << 32 : 0);
}
}  // namespace

extern "C" {
const char* spork_model_name() { return SPORK_MODEL_NAME; }
uint32_t spork_model_port_count() { return SPORK_PORT_COUNT; }
const char* spork_model_port_name(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].name : nullptr; }
uint32_t spork_model_port_width(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].width : 0; }
int spork_model_port_is_input(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].input : 0; }

// What one instance allocates when made: its registers and fixed-size memories, which Verilator
// holds in the symbol table and resets at construction (so every byte is touched). Read before any
// instance is made, so a design whose memories are too large is refused unbuilt.
uint64_t spork_model_state_bytes() { return sizeof(Instance) + sizeof(SPORK_SYMS); }

void* spork_model_new() { return new Instance(); }

void spork_model_free(void* m) {
    Instance* inst = static_cast<Instance*>(m);
    if (inst->failed.empty()) {
        try {
            inst->top.final();
        } catch (const std::exception&) {
        }
    }
    delete inst;
}

// Why the instance is dead (a $stop, $fatal or runtime error), or null while it lives.
const char* spork_model_failed(void* m) {
    Instance* inst = static_cast<Instance*>(m);
    return inst->failed.empty() ? nullptr : inst->failed.c_str();
}

void spork_model_eval(void* m) {
    Instance* inst = static_cast<Instance*>(m);
    if (!inst->failed.empty()) return;
    try {
        inst->top.eval();
    } catch (const std::exception& e) {
        inst->failed = e.what();
        if (inst->failed.empty()) inst->failed = "the design stopped";
    }
}

#define SPORK_SET(i, member, name, width, input) \
    case i:                                      \
        if (input) put(top.member, w, width);    \
        break;
// Sets input `port` from `w`, (width + 63) / 64 words.
void spork_model_set_words(void* m, uint32_t port, const uint64_t* w) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_SET)
        default:
            break;
    }
}

#define SPORK_GET(i, member, name, width, input) \
    case i:                                      \
        take(top.member, w);                     \
        break;
// Reads `port` into `w`, (width + 63) / 64 words.
void spork_model_get_words(void* m, uint32_t port, uint64_t* w) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_GET)
        default:
            break;
    }
}

#define SPORK_SET1(i, member, name, width, input) \
    case i:                                       \
        if (input) put1(top.member, value, width); \
        break;
// Sets `port` to `value` (a port wider than 64 bits gets it in its low bits, the rest cleared).
void spork_model_set(void* m, uint32_t port, uint64_t value) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_SET1)
        default:
            break;
    }
}

#define SPORK_GET1(i, member, name, width, input) \
    case i:                                       \
        return take1(top.member);
// The low 64 bits of `port`.
uint64_t spork_model_get(void* m, uint32_t port) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_GET1)
        default:
            return 0;
    }
}

// One AXI4-Stream run with the loop here, not one call per cycle from Rust (which cost more than
// the design's own evaluation). `p` holds the port indices: clock, s_tdata, s_tvalid, s_tready,
// s_tlast, m_tdata, m_tvalid, m_tready, m_tlast, s_tkeep, m_tkeep (the last two UINT32_MAX when the
// design has none). Beat b's TDATA is words [b * in_words, (b + 1) * in_words) of `in` (likewise
// `out` with out_words), its TKEEP in_keep[b] (out_keep[b]). Each cycle: the next input beat offered
// and the output's TREADY set (from the repeating pattern `ready` of `n_ready` cycles; none: always
// high), the falling edge settles the combinational logic, both handshakes are sampled, the rising
// edge clocks (a beat moves when TVALID and TREADY were both high before it). It stops once `n_in`
// beats went in and `n_out` came out, when more than `n_out` came out, or after more than `patience`
// cycles in which no beat moved. Returns the cycles run; `moved` gets the beats sent and received.
uint64_t spork_model_stream(void* m, const uint32_t* p, uint32_t in_words, const uint64_t* in,
                            const uint64_t* in_keep, const uint8_t* in_last, uint64_t n_in, uint32_t out_words,
                            uint64_t* out, uint64_t* out_keep, uint8_t* out_last, uint64_t n_out,
                            const uint8_t* ready, uint64_t n_ready, uint64_t patience, uint64_t* moved) {
    enum { CLK, SD, SV, SR, SL, MD, MV, MR, ML, SK, MK };
    const uint32_t none = 0xffffffffu;
    uint64_t sent = 0, got = 0, idle = 0, c = 0;
    while (got < n_out || sent < n_in) {
        const bool offer = sent < n_in;
        if (offer) {
            spork_model_set_words(m, p[SD], in + sent * in_words);
            spork_model_set(m, p[SL], in_last[sent]);
            if (p[SK] != none) spork_model_set(m, p[SK], in_keep[sent]);
        }
        spork_model_set(m, p[SV], offer);
        const bool taking = n_ready == 0 || ready[c % n_ready] != 0;
        spork_model_set(m, p[MR], taking);
        spork_model_set(m, p[CLK], 0);
        spork_model_eval(m);
        const bool accepted = offer && spork_model_get(m, p[SR]) == 1;
        const bool produced = taking && spork_model_get(m, p[MV]) == 1;
        if (produced) {
            if (got < n_out) {
                spork_model_get_words(m, p[MD], out + got * out_words);
                out_last[got] = spork_model_get(m, p[ML]) == 1;
                out_keep[got] = p[MK] != none ? spork_model_get(m, p[MK]) : ~0ull;
            }
            ++got;
        }
        spork_model_set(m, p[CLK], 1);
        spork_model_eval(m);
        ++c;
        if (spork_model_failed(m)) break;
        sent += accepted;
        idle = (accepted || produced) ? 0 : idle + 1;
        if (idle > patience || got > n_out) break;
    }
    spork_model_set(m, p[SV], 0);
    spork_model_set(m, p[MR], 0);
    spork_model_set(m, p[CLK], 0);
    spork_model_eval(m);
    moved[0] = sent;
    moved[1] = got;
    return c;
}

// `cycles` full clock periods on the port `clock`: rising edge, eval, falling edge, eval.
void spork_model_cycles(void* m, uint32_t clock, uint64_t cycles) {
    for (uint64_t c = 0; c < cycles; ++c) {
        spork_model_set(m, clock, 1);
        spork_model_eval(m);
        spork_model_set(m, clock, 0);
        spork_model_eval(m);
        if (spork_model_failed(m)) return;
    }
}
}
