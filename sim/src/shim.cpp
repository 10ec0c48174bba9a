// The C ABI of one Verilated model, included at the end of the model's single translation unit.
// The unit defines SPORK_MODEL (the Verilator class), SPORK_MODEL_NAME, SPORK_PORT_COUNT and
// SPORK_PORTS(X), one X(index, member, "name", width, is_input) per port, read from the header.
// Each instance owns its VerilatedContext, so instances on different threads share no state.
#include <cstdint>

namespace {
struct Instance {
    VerilatedContext context;
    SPORK_MODEL top;
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
    inst->top.final();
    delete inst;
}

void spork_model_eval(void* m) { static_cast<Instance*>(m)->top.eval(); }

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

// `cycles` full clock periods on the port `clock`: rising edge, eval, falling edge, eval.
void spork_model_cycles(void* m, uint32_t clock, uint64_t cycles) {
    for (uint64_t c = 0; c < cycles; ++c) {
        spork_model_set(m, clock, 1);
        spork_model_eval(m);
        spork_model_set(m, clock, 0);
        spork_model_eval(m);
    }
}
}
