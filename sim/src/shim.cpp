// The C ABI of one Verilated model, included at the end of the model's single translation unit.
// The unit defines SPORK_MODEL (the Verilator class), SPORK_MODEL_NAME, SPORK_PORT_COUNT and
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
}  // namespace

extern "C" {
const char* spork_model_name() { return SPORK_MODEL_NAME; }
uint32_t spork_model_port_count() { return SPORK_PORT_COUNT; }
const char* spork_model_port_name(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].name : nullptr; }
uint32_t spork_model_port_width(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].width : 0; }
int spork_model_port_is_input(uint32_t i) { return i < SPORK_PORT_COUNT ? kPorts[i].input : 0; }

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
        if (input) top.member = value;           \
        break;
void spork_model_set(void* m, uint32_t port, uint64_t value) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_SET)
        default:
            break;
    }
}

#define SPORK_GET(i, member, name, width, input) \
    case i:                                      \
        return static_cast<uint64_t>(top.member);
uint64_t spork_model_get(void* m, uint32_t port) {
    auto& top = static_cast<Instance*>(m)->top;
    switch (port) {
        SPORK_PORTS(SPORK_GET)
        default:
            return 0;
    }
}

// One AXI4-Stream run with the loop here, not one call per cycle from Rust (which cost more than
// the design's own evaluation). `p` holds the port indices: clock, s_tdata, s_tvalid, s_tready,
// s_tlast, m_tdata, m_tvalid, m_tready, m_tlast. Each cycle: the next input beat offered and the
// output's TREADY set (from the repeating pattern `ready` of `n_ready` cycles; none: always high),
// the falling edge settles the
// combinational logic, both handshakes are sampled, the rising edge clocks (a beat moves when TVALID
// and TREADY were both high before it). It stops once `n_in` beats went in and `n_out` came out,
// when more than `n_out` came out, or after more than `patience` cycles in which no beat moved.
// Returns the cycles run; `moved` gets the beats sent and the beats received.
uint64_t spork_model_stream(void* m, const uint32_t* p, const uint64_t* in, const uint8_t* in_last,
                            uint64_t n_in, uint64_t* out, uint8_t* out_last, uint64_t n_out,
                            const uint8_t* ready, uint64_t n_ready, uint64_t patience, uint64_t* moved) {
    enum { CLK, SD, SV, SR, SL, MD, MV, MR, ML };
    uint64_t sent = 0, got = 0, idle = 0, c = 0;
    while (got < n_out || sent < n_in) {
        const bool offer = sent < n_in;
        if (offer) {
            spork_model_set(m, p[SD], in[sent]);
            spork_model_set(m, p[SL], in_last[sent]);
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
                out[got] = spork_model_get(m, p[MD]);
                out_last[got] = spork_model_get(m, p[ML]) == 1;
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
