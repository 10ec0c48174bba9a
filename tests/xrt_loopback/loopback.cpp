// A loopback implementation of the part of the XRT C API that Spork's `xrt` binding calls, built as
// libxrt_coreutil.so.2 so that the real binding code (not a Rust mock) runs against it in tests with
// LD_LIBRARY_PATH pointing here. Behind it is the simulated board: an xclbin names a spork-sim model
// (a Verilated kernel), loading it dlopens that model, and the data movers `mm2s` -> `<kernel>_axis`
// -> `s2mm` stream words through it in the layout of host/src/runtime/stream.rs.
//
// Loopback xclbin format: the 8-byte magic "xclbin2\0", then text lines "spork-loopback",
// "kernel=<sobel|bloom|dense>", "uuid=<32 hex digits>". Models come from $SPORK_SIM_MODELS.
//
// A model repository's kernel instead names its verilated design, "model=<path of the .so>", and
// optionally "scalars=<port>,<port>" (default none) and "ports=<clock>,<reset>,<in>,<out>" (default
// ap_clk,ap_rst_n,s_axis,m_axis): it is driven through its AXI4-Stream handshake as the card would,
// its scalars taken from the transfer's first `header` words (mm2s argument 2) and TLAST on every
// `row`-th word after them (argument 3; 0: on the last word only). "mover=512" says the image's
// data movers were built 512 bits wide (a model whose beats are wider than 64 bits): a mover word,
// as the word counts and the header count them, is then eight 64-bit words of the buffer.

#include <dlfcn.h>
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Model {
    void* lib = nullptr;
    void* (*mnew)() = nullptr;
    void (*mfree)(void*) = nullptr;
    void (*eval)(void*) = nullptr;
    void (*set)(void*, uint32_t, uint64_t) = nullptr;
    uint64_t (*get)(void*, uint32_t) = nullptr;
    void (*set_words)(void*, uint32_t, const uint64_t*) = nullptr;
    void (*get_words)(void*, uint32_t, uint64_t*) = nullptr;
    void (*cycles)(void*, uint32_t, uint64_t) = nullptr;
    uint32_t (*count)() = nullptr;
    const char* (*pname)(uint32_t) = nullptr;
    std::map<std::string, uint32_t> ports;
};

struct Axis {
    std::string path;  // the verilated design; empty: a built-in kernel
    std::vector<std::string> scalars;
    std::string clock = "ap_clk", reset = "ap_rst_n", in = "s_axis", out = "m_axis";
    size_t words = 1;  // 64-bit words in one of the data movers' words (8 for "mover=512")
};

struct Device {
    unsigned index = 0;
    std::string kernel;
    Axis axis;
    unsigned char uuid[16] = {0};
    bool loaded = false;
    std::unique_ptr<Model> model;
};

struct Kernel {
    Device* dev;
    std::string name;
};

struct Bo {
    std::vector<uint8_t> data;
};

struct Run {
    Kernel* k;
    Bo* bo = nullptr;
    uint32_t words = 0;
    uint32_t header = 0;
    uint32_t row = 0;
    bool started = false;
    bool done = false;
};

// Runs waiting for their partner: a started mm2s waits for s2mm and the other way round. Workers call
// in from several threads (a draining board and its successor): every entry point takes this lock,
// and no C++ exception crosses the C ABI.
std::map<Device*, Run*> pending_in, pending_out;
std::mutex lock;
#define GUARD std::lock_guard<std::mutex> guard(lock)

void close_model(Device* d) {
    if (d->model && d->model->lib) dlclose(d->model->lib);
    d->model.reset();
}

bool open_model(Device* d) {
    const char* dir = getenv("SPORK_SIM_MODELS");
    std::string path = d->axis.path.empty()
                           ? std::string(dir ? dir : ".") + "/libspork_model_" + d->kernel + ".so"
                           : d->axis.path;
    auto m = std::make_unique<Model>();
    m->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m->lib) return false;
    m->mnew = (void* (*)())dlsym(m->lib, "spork_model_new");
    m->mfree = (void (*)(void*))dlsym(m->lib, "spork_model_free");
    m->eval = (void (*)(void*))dlsym(m->lib, "spork_model_eval");
    m->set = (void (*)(void*, uint32_t, uint64_t))dlsym(m->lib, "spork_model_set");
    m->get = (uint64_t(*)(void*, uint32_t))dlsym(m->lib, "spork_model_get");
    m->set_words = (void (*)(void*, uint32_t, const uint64_t*))dlsym(m->lib, "spork_model_set_words");
    m->get_words = (void (*)(void*, uint32_t, uint64_t*))dlsym(m->lib, "spork_model_get_words");
    m->cycles = (void (*)(void*, uint32_t, uint64_t))dlsym(m->lib, "spork_model_cycles");
    m->count = (uint32_t(*)())dlsym(m->lib, "spork_model_port_count");
    m->pname = (const char* (*)(uint32_t))dlsym(m->lib, "spork_model_port_name");
    if (!m->mnew || !m->mfree || !m->eval || !m->set || !m->get || !m->set_words || !m->get_words || !m->cycles ||
        !m->count || !m->pname) {
        dlclose(m->lib);
        return false;
    }
    for (uint32_t i = 0; i < m->count(); ++i) m->ports[m->pname(i)] = i;
    d->model = std::move(m);
    return true;
}

// Drives the Verilated kernel with the input words; returns the output words.
std::vector<uint64_t> process(Model& m, const std::string& kernel, const std::vector<uint64_t>& in) {
    void* h = m.mnew();
    auto P = [&](const char* n) { return m.ports.at(n); };
    auto set = [&](const char* n, uint64_t v) { m.set(h, P(n), v); };
    auto get = [&](const char* n) { return m.get(h, P(n)); };
    uint32_t clk = P("clock");
    m.set(h, clk, 0);
    m.eval(h);
    std::vector<uint64_t> out;
    auto step = [&](auto collect) {
        m.cycles(h, clk, 1);
        collect();
    };
    if (kernel == "sobel" && !in.empty()) {
        auto collect = [&] { if (get("out_valid")) out.push_back(get("out_mag")); };
        set("width", in[0]);
        for (size_t i = 1; i < in.size(); ++i) {
            set("in_valid", 1);
            set("in_first", i == 1);
            set("in_pixel", in[i] & 0xff);
            step(collect);
        }
        set("in_valid", 0);
        set("in_first", 0);
        for (int i = 0; i < 8; ++i) step(collect);
    } else if (kernel == "bloom" && in.size() >= 16) {
        auto collect = [&] { if (get("out_valid")) out.push_back(get("out_score")); };
        for (uint64_t b = 0; b < 1024; ++b) {
            set("load_we", 1);
            set("load_addr", b);
            set("load_bit", (in[b / 64] >> (b % 64)) & 1);
            m.cycles(h, clk, 1);
        }
        set("load_we", 0);
        for (size_t i = 16; i < in.size(); ++i) {
            set("in_valid", 1);
            set("in_last", (in[i] >> 32) & 1);
            set("in_hash", in[i] & 0xffffffffu);
            step(collect);
        }
        set("in_valid", 0);
        set("in_last", 0);
        for (int i = 0; i < 8; ++i) step(collect);
    } else if (kernel == "dense" && in.size() >= 128) {
        auto collect = [&] {
            if (!get("out_valid")) return;
            for (int half = 0; half < 2; ++half) {
                uint64_t w = 0;
                for (int k = 0; k < 4; ++k) {
                    std::string n = "out_y$" + std::to_string(4 * half + k);
                    w |= (m.get(h, m.ports.at(n)) & 0xffff) << (16 * k);
                }
                out.push_back(w);
            }
        };
        for (uint64_t n = 0; n < 512; ++n) {
            set("w_we", 1);
            set("w_neuron", n / 64);
            set("w_index", n % 64);
            set("w_data", (in[n / 4] >> (16 * (n % 4))) & 0xffff);
            m.cycles(h, clk, 1);
        }
        set("w_we", 0);
        for (size_t i = 128; i < in.size(); ++i) {
            set("in_valid", 1);
            set("in_last", (in[i] >> 16) & 1);
            set("in_x", in[i] & 0xffff);
            step(collect);
        }
        set("in_valid", 0);
        set("in_last", 0);
        for (int i = 0; i < 8; ++i) step(collect);
    }
    m.mfree(h);
    return out;
}

// Drives a repository model's design through its stream handshake, as sim/src/axis.rs does: each
// cycle the next word is offered (TLAST by `row`), TREADY out is high, the logic settles, both
// handshakes are sampled, then the clock ticks. Stops when `expected` words came out and every word
// went in, or after 10,000 cycles without progress. `header`, `row` and `expected` count mover words
// (`a.words` 64-bit words each), as the movers' arguments do.
std::vector<uint64_t> process_axis(Model& m, const Axis& a, const std::vector<uint64_t>& in, uint32_t header,
                                   uint32_t row, size_t expected) {
    const size_t W = a.words, total = in.size() / W;
    void* h = m.mnew();
    auto P = [&](const std::string& n) { return m.ports.at(n); };
    uint32_t clk = P(a.clock);
    uint32_t s_data = P(a.in + "_tdata"), s_valid = P(a.in + "_tvalid"), s_ready = P(a.in + "_tready");
    uint32_t s_last = P(a.in + "_tlast"), m_data = P(a.out + "_tdata"), m_valid = P(a.out + "_tvalid");
    uint32_t m_ready = P(a.out + "_tready");
    for (size_t k = 0; k < a.scalars.size(); ++k) m.set(h, P(a.scalars[k]), k < header && k < total ? in[k * W] : 0);
    m.set(h, s_valid, 0);
    m.set(h, m_ready, 0);
    // The data movers carry no TKEEP: the packaged kernel ties its every lane high (repository/vitis.rs).
    auto keep = m.ports.find(a.in + "_tkeep");
    if (keep != m.ports.end()) m.set(h, keep->second, ~0ull);
    if (!a.reset.empty()) {
        m.set(h, P(a.reset), 0);
        m.cycles(h, clk, 4);
        m.set(h, P(a.reset), 1);
    }
    m.eval(h);
    std::vector<uint64_t> out;
    size_t sent = std::min<size_t>(header, total);
    uint64_t idle = 0;
    // Scratch beats wider than any port the loopback drives (set_words/get_words move the port's
    // whole width, which may exceed the mover's word).
    std::vector<uint64_t> beat(64), word(64);
    while ((out.size() < expected * W || sent < total) && idle <= 10000) {
        bool offered = sent < total;
        if (offered) {
            size_t i = sent - header;
            bool last = sent + 1 == total || (row != 0 && (i + 1) % row == 0);
            std::fill(word.begin(), word.end(), 0);
            std::copy_n(in.data() + sent * W, W, word.begin());
            m.set_words(h, s_data, word.data());
            m.set(h, s_last, last);
        }
        m.set(h, s_valid, offered);
        m.set(h, m_ready, 1);
        m.eval(h);
        bool accepted = offered && m.get(h, s_ready);
        bool produced = m.get(h, m_valid);
        if (produced) {
            std::fill(beat.begin(), beat.end(), 0);
            m.get_words(h, m_data, beat.data());
            out.insert(out.end(), beat.begin(), beat.begin() + W);
        }
        m.cycles(h, clk, 1);
        sent += accepted;
        idle = (accepted || produced) ? 0 : idle + 1;
    }
    m.mfree(h);
    return out;
}

void try_stream(Device* d) {
    auto i = pending_in.find(d);
    auto o = pending_out.find(d);
    if (i == pending_in.end() || o == pending_out.end()) return;
    Run* in = i->second;
    Run* out = o->second;
    pending_in.erase(i);
    pending_out.erase(o);
    const size_t W = d->axis.path.empty() ? 1 : d->axis.words;
    std::vector<uint64_t> words(size_t(in->words) * W);
    std::memcpy(words.data(), in->bo->data.data(), std::min(words.size() * 8, in->bo->data.size()));
    std::vector<uint64_t> result;
    try {
        result = d->axis.path.empty() ? process(*d->model, d->kernel, words)
                                      : process_axis(*d->model, d->axis, words, in->header, in->row, out->words);
    } catch (...) {
        result.clear();  // a model without the expected ports: the output stays empty (a failed run)
    }
    size_t n = std::min<size_t>(result.size(), size_t(out->words) * W);
    std::memset(out->bo->data.data(), 0, out->bo->data.size());
    std::memcpy(out->bo->data.data(), result.data(), std::min(n * 8, out->bo->data.size()));
    in->done = out->done = true;
}

bool parse_hex_uuid(const std::string& s, unsigned char* uuid) {
    if (s.size() != 32) return false;
    try {
        for (int i = 0; i < 16; ++i) uuid[i] = (unsigned char)std::stoul(s.substr(2 * i, 2), nullptr, 16);
    } catch (...) {
        return false;
    }
    return true;
}

}  // namespace

extern "C" {

void* xrtDeviceOpen(unsigned int index) {
    GUARD;
    if (index != 0) {
        errno = ENODEV;
        return nullptr;
    }
    return new Device{index};
}

void* xrtDeviceOpenByBDF(const char* bdf) {
    GUARD;
    if (!bdf || !*bdf) {
        errno = EINVAL;
        return nullptr;
    }
    return new Device{0};
}

int xrtDeviceClose(void* h) {
    GUARD;
    auto* d = static_cast<Device*>(h);
    if (!d) return -EINVAL;
    close_model(d);
    delete d;
    return 0;
}

int xrtDeviceLoadXclbinFile(void* h, const char* path) {
    GUARD;
    auto* d = static_cast<Device*>(h);
    std::ifstream f(path, std::ios::binary);
    if (!d || !f) return -ENOENT;
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (all.size() < 8 || all.compare(0, 8, std::string("xclbin2\0", 8)) != 0) return -EINVAL;
    std::istringstream text(all.substr(8));
    std::string line, kernel, uuid;
    Axis axis;
    bool ours = false;
    auto split = [](const std::string& list) {
        std::vector<std::string> parts;
        std::stringstream ss(list);
        for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
        return parts;
    };
    while (std::getline(text, line)) {
        if (line == "spork-loopback") ours = true;
        if (line.rfind("kernel=", 0) == 0) kernel = line.substr(7);
        if (line.rfind("uuid=", 0) == 0) uuid = line.substr(5);
        if (line.rfind("model=", 0) == 0) axis.path = line.substr(6);
        if (line.rfind("scalars=", 0) == 0) axis.scalars = split(line.substr(8));
        if (line.rfind("mover=", 0) == 0) {
            std::string bits = line.substr(6);
            if (bits != "64" && bits != "512") return -EINVAL;
            axis.words = bits == "512" ? 8 : 1;
        }
        if (line.rfind("ports=", 0) == 0) {
            auto p = split(line.substr(6));
            if (p.size() != 4) return -EINVAL;
            axis.clock = p[0], axis.reset = p[1], axis.in = p[2], axis.out = p[3];
        }
    }
    if (!ours || kernel.empty()) return -EINVAL;
    unsigned char id[16];
    if (!parse_hex_uuid(uuid, id)) return -EINVAL;
    // A real reconfiguration: the previous image goes, the new one is loaded.
    close_model(d);
    d->loaded = false;
    d->kernel = kernel;
    d->axis = axis;
    if (!open_model(d)) return -ENOENT;
    std::memcpy(d->uuid, id, 16);
    d->loaded = true;
    return 0;
}

int xrtDeviceGetXclbinUUID(void* h, unsigned char* out) {
    GUARD;
    auto* d = static_cast<Device*>(h);
    if (!d || !d->loaded) return -ENOENT;
    std::memcpy(out, d->uuid, 16);
    return 0;
}

void* xrtPLKernelOpen(void* h, const unsigned char* uuid, const char* name) {
    GUARD;
    auto* d = static_cast<Device*>(h);
    std::string n = name ? name : "";
    if (!d || !d->loaded || std::memcmp(uuid, d->uuid, 16) != 0) {
        errno = ENOENT;
        return nullptr;
    }
    if (n != "mm2s" && n != "s2mm" && n != d->kernel + "_axis") {
        errno = ENOENT;
        return nullptr;
    }
    return new Kernel{d, n};
}

int xrtKernelClose(void* k) {
    GUARD;
    delete static_cast<Kernel*>(k);
    return 0;
}

int xrtKernelArgGroupId(void* k, int argno) {
    GUARD;
    return (k && argno >= 0) ? 0 : -EINVAL;
}

void* xrtBOAlloc(void* h, size_t size, uint64_t, uint32_t) {
    GUARD;
    if (!h) {
        errno = EINVAL;
        return nullptr;
    }
    auto* b = new Bo;
    b->data.resize(size);
    return b;
}

int xrtBOFree(void* b) {
    GUARD;
    delete static_cast<Bo*>(b);
    return 0;
}

size_t xrtBOSize(void* b) {
    GUARD;
    return static_cast<Bo*>(b)->data.size();
}

int xrtBOWrite(void* b, const void* src, size_t size, size_t seek) {
    GUARD;
    auto* bo = static_cast<Bo*>(b);
    if (seek + size > bo->data.size()) return -EINVAL;
    std::memcpy(bo->data.data() + seek, src, size);
    return 0;
}

int xrtBORead(void* b, void* dst, size_t size, size_t skip) {
    GUARD;
    auto* bo = static_cast<Bo*>(b);
    if (skip + size > bo->data.size()) return -EINVAL;
    std::memcpy(dst, bo->data.data() + skip, size);
    return 0;
}

int xrtBOSync(void* b, int, size_t size, size_t offset) {
    GUARD;
    auto* bo = static_cast<Bo*>(b);
    return (offset + size <= bo->data.size()) ? 0 : -EINVAL;
}

void* xrtRunOpen(void* k) {
    GUARD;
    if (!k) {
        errno = EINVAL;
        return nullptr;
    }
    return new Run{static_cast<Kernel*>(k)};
}

int xrtRunSetArg(void* r, int index, ...) {
    GUARD;
    auto* run = static_cast<Run*>(r);
    va_list ap;
    va_start(ap, index);
    int rc = 0;
    if (index == 0) {
        run->bo = static_cast<Bo*>(va_arg(ap, void*));
    } else if (index == 1) {
        run->words = va_arg(ap, unsigned int);
    } else if (index == 2 && run->k->name == "mm2s") {
        run->header = va_arg(ap, unsigned int);
    } else if (index == 3 && run->k->name == "mm2s") {
        run->row = va_arg(ap, unsigned int);
    } else {
        rc = -EINVAL;
    }
    va_end(ap);
    return rc;
}

int xrtRunStart(void* r) {
    GUARD;
    auto* run = static_cast<Run*>(r);
    if (!run->bo) return -EINVAL;
    run->started = true;
    Device* d = run->k->dev;
    if (run->k->name == "mm2s") pending_in[d] = run;
    else if (run->k->name == "s2mm") pending_out[d] = run;
    else run->done = true;  // the free-running stream kernel
    try_stream(d);
    return 0;
}

int xrtRunState(void* r) {
    GUARD;
    auto* run = static_cast<Run*>(r);
    return run->done ? 4 : (run->started ? 3 : 1);
}

int xrtRunWaitFor(void* r, unsigned int) {
    GUARD;
    auto* run = static_cast<Run*>(r);
    return run->done ? 4 /* COMPLETED */ : 8 /* TIMEOUT */;
}

int xrtRunClose(void* r) {
    GUARD;
    auto* run = static_cast<Run*>(r);
    for (auto* m : {&pending_in, &pending_out}) {
        for (auto it = m->begin(); it != m->end();) {
            it = (it->second == run) ? m->erase(it) : std::next(it);
        }
    }
    delete run;
    return 0;
}

}  // extern "C"
