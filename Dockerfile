# syntax=docker/dockerfile:1
# The spork image: one binary (`spork serve`, `spork worker`, the rest of the CLI), run as the
# non-root user 10001.
#   docker build -t spork:0.1.0 .                                    serve, CPU workers, emulated
#                                                                    and simulated boards
#   docker build --build-arg FEATURES="xrt f1" -t spork:0.1.0-fpga .  also Alveo and F1 workers
# Board images built before the image (bitstreams/alveo/, bitstreams/f1/) are baked in with the
# manifests. docs/deploy.md has the whole procedure.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS builder
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Cargo features, e.g. "xrt f1"; empty for the portable image.
ARG FEATURES=""
# cmake, g++ and libclang build HiGHS (the MILP solver); verilator the simulated board's models;
# libxrt-dev the XRT bindings of feature xrt (the .proto files need no protoc: protox compiles them). Versions are bookworm's
# (pinning each would break at every Debian point release).
# hadolint ignore=DL3008
RUN case " $FEATURES " in *[\ ,]xrt[\ ,]*) xrt=libxrt-dev ;; *) xrt="" ;; esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ libclang-dev verilator \
      ${xrt:+"$xrt"} \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The Verilated models are shared libraries spork loads at run time, from the build folder it was
# compiled in unless SPORK_SIM_MODELS says otherwise: they are copied out beside the binary.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    cargo build --release --locked -p spork ${FEATURES:+--features "$FEATURES"} \
 && set -- target/release/build/spork-sim-*/out/libspork_verilated.so \
 && if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then \
      echo "expected one simulated-board build, found: $*" >&2; exit 1; \
    fi \
 && models="$(dirname "$1")" \
 && mkdir -p /out/sim \
 && cp target/release/spork /out/ \
 && cp "$models"/libspork_*.so /out/sim/ \
 && for source in "$models"/*/source.v; do \
      name="$(basename "$(dirname "$source")")"; \
      mkdir -p "/out/sim/$name" && cp "$source" "/out/sim/$name/"; \
    done

FROM debian:bookworm-slim
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG FEATURES=""
# libstdc++ for HiGHS and the Verilated models; a C/C++ compiler and verilator because a model
# repository's CPU code is compiled, and its RTL verilated (--board sim), when it loads (Spork's own
# sobel, bloom and dense included), cached in $SPORK_CACHE_DIR. With feature xrt the binary links
# libxrt_coreutil.so.2, so Debian's XRT runtime comes along and the image starts anywhere; on a
# board node the worker's LD_LIBRARY_PATH puts the node's own XRT first
# (deploy/overlays/*/fpga-worker.yaml), as XRT's user side must match the node's driver.
# hadolint ignore=DL3008
RUN case " $FEATURES " in *[\ ,]xrt[\ ,]*) xrt=libxrt1 ;; *) xrt="" ;; esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends libstdc++6 gcc g++ libc6-dev make verilator ${xrt:+"$xrt"} \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 spork \
 && useradd --system --uid 10001 --gid spork --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin spork \
 && mkdir -p /etc/spork
COPY --from=builder /out/spork /usr/local/bin/spork
COPY --from=builder /out/sim/ /usr/local/lib/spork/sim/
# Manifests (a board's clock and resources) and any board images built so far: spork reads them
# from disk at run time, from $SPORK_BITSTREAMS.
COPY bitstreams/ /usr/local/share/spork/bitstreams/
ENV SPORK_BITSTREAMS=/usr/local/share/spork/bitstreams \
    SPORK_SIM_MODELS=/usr/local/lib/spork/sim \
    SPORK_CACHE_DIR=/tmp/spork-cache
USER 10001:10001
# serve: HTTP, gRPC; worker: its API, its probes.
EXPOSE 8000 8001 7070 7071
ENTRYPOINT ["/usr/local/bin/spork"]
CMD ["--help"]
