#!/usr/bin/env bash
# Builds an Alveo (or AWS F1 shell) xclbin of one Spork kernel: the generated Verilog
# (bitstreams/sim/<kernel>.v) behind its AXI4-Stream wrapper (scripts/vitis/<kernel>_axis.v) as a
# free-running RTL kernel, between two HLS data movers (mm2s -> kernel -> s2mm).
# Needs Vitis and Vivado (2022.2 or later) on PATH and the platform installed. See scripts/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VITIS="$ROOT/scripts/vitis"
PROG="${0##*/}"
readonly ROOT VITIS PROG

usage() {
    cat <<EOF
usage: $PROG --kernel sobel|bloom|dense --platform NAME|XPFM [--target hw|hw_emu]
                       [--out DIR] [--clock MHZ] [--part PART] [--dry-run]
       $PROG --package DIR --platform NAME|XPFM [...]

  --kernel     the design to build
  --package    a repository model's Vitis kernel, as \`spork kernel package MODEL --out DIR\` wrote it
               (DIR/<top>_vitis.v and DIR/sources.txt); its image needs no manifest (the model's
               [fpga.alveo] names the xclbin)
  --platform   Vitis platform name (e.g. xilinx_u250_gen3x16_xdma_4_1_202210_1) or .xpfm path
  --target     hw (default) or hw_emu
  --out        build directory (default: build/vitis/<kernel>.<target>)
  --clock      requested kernel clock, whole MHz (default: 300)
  --part       FPGA part to package the RTL kernel for (default: the platform's, via platforminfo)
  --dry-run    print the commands, one per line, instead of running them
  -h, --help   this help

Steps: package the RTL kernel .xo (vivado), compile mm2s/s2mm (v++ -c; 64-bit words, or 512 as
DIR/mover_bits.txt says for a package whose beats are wider), link (v++ -l) into
<out>/<kernel>.<target>.xclbin. For hw, also write <out>/<kernel>.toml (the image's manifest) and,
on an Alveo platform, copy both to bitstreams/alveo/; on the AWS F1 shell, continue with
scripts/build-afi.sh --xclbin <out>/<kernel>.hw.xclbin.
EOF
}

die() {
    echo "$PROG: error: $*" >&2
    exit 1
}

# A command as one shell-quoted line: what --dry-run prints and what a real run logs.
quoted() {
    local arg line=""
    for arg in "$@"; do
        line+="${line:+ }$(printf '%q' "$arg")"
    done
    printf '%s\n' "$line"
}

run() {
    if ((dry_run)); then
        quoted "$@"
    else
        echo "+ $(quoted "$@")" >&2
        "$@"
    fi
}

# run_in DIR CMD...: CMD run from DIR, where Vivado and v++ drop their scratch files (.Xil, ...).
run_in() {
    local dir=$1
    shift
    if ((dry_run)); then
        printf 'cd %q && %s\n' "$dir" "$(quoted "$@")"
    else
        echo "+ cd $(printf '%q' "$dir") && $(quoted "$@")" >&2
        (cd "$dir" && "$@")
    fi
}

# run_to FILE CMD...: CMD with its standard output written to FILE.
run_to() {
    local file=$1
    shift
    if ((dry_run)); then
        printf '%s > %q\n' "$(quoted "$@")" "$file"
    else
        echo "+ $(quoted "$@") > $(printf '%q' "$file")" >&2
        "$@" >"$file"
    fi
}

need_value() {
    [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"
}

# A TOML basic string.
toml_str() {
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

kernel="" package="" platform="" target=hw out="" clock=300 part=auto dry_run=0 mover_bits=64
while (($#)); do
    case $1 in
        --kernel) need_value "$@"; kernel=$2; shift 2 ;;
        --package) need_value "$@"; package=$2; shift 2 ;;
        --platform) need_value "$@"; platform=$2; shift 2 ;;
        --target) need_value "$@"; target=$2; shift 2 ;;
        --out) need_value "$@"; out=$2; shift 2 ;;
        --clock) need_value "$@"; clock=$2; shift 2 ;;
        --part) need_value "$@"; part=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

# A repository model's package: its top and every Verilog file, from what `spork kernel package` wrote.
sources=()
if [[ -n $package ]]; then
    [[ -z $kernel ]] || die "give --kernel or --package, not both"
    tops=("$package"/*_vitis.v)
    [[ ${#tops[@]} -eq 1 && -f ${tops[0]} ]] \
        || die "$package holds no single <top>_vitis.v: run \`spork kernel package MODEL --out $package\` first"
    [[ -f $package/sources.txt ]] || die "$package/sources.txt is missing: run \`spork kernel package\` again"
    mapfile -t sources <"$package/sources.txt"
    # The movers' word width: 512 bits for a model whose beats are wider than 64 (spork kernel package).
    if [[ -f $package/mover_bits.txt ]]; then
        mover_bits=$(<"$package/mover_bits.txt")
        [[ $mover_bits == 64 || $mover_bits == 512 ]] || die "$package/mover_bits.txt says '$mover_bits': 64 or 512"
    fi
    top=$(basename "${tops[0]}" .v)
    kernel=${top%_vitis}
    item="item"
else
    case $kernel in
        sobel) item="pixel" ;;
        bloom) item="term" ;;
        dense) item="input element" ;;
        "") die "--kernel or --package is required (sobel, bloom or dense; or a packaged model)" ;;
        *) die "unknown kernel '$kernel' (sobel, bloom or dense)" ;;
    esac
    top="${kernel}_axis"
    sources=("$VITIS/$top.v" "$ROOT/bitstreams/sim/$kernel.v")
fi
[[ -n $platform ]] || die "--platform is required (a platform name or .xpfm path)"
[[ $target == hw || $target == hw_emu ]] || die "--target must be hw or hw_emu, not '$target'"
# v++ takes the kernel clock as whole MHz.
[[ $clock =~ ^[1-9][0-9]*$ ]] || die "--clock must be a whole number of MHz, not '$clock'"

# The tools run from the build directory: make a platform given as a relative path absolute.
if [[ ($platform == */* || $platform == *.xpfm) && $platform != /* ]]; then
    platform="$PWD/$platform"
fi
out=${out:-$ROOT/build/vitis/$kernel.$target}
[[ $out == /* ]] || out="$PWD/$out"
xclbin="$kernel.$target.xclbin"
kernel_v=${sources[-1]}
# The AWS F1 shell's xclbin is not an Alveo image: build-afi.sh turns it into an AFI.
f1=0
[[ $platform == *aws-vu9p-f1* ]] && f1=1

if ((!dry_run)); then
    for tool in vivado v++ sha256sum; do
        command -v "$tool" >/dev/null || die "'$tool' not found on PATH (source the Vitis/Vivado settings64.sh and XRT setup.sh)"
    done
    if [[ $part == auto ]]; then
        command -v platforminfo >/dev/null || [[ -x ${XILINX_VITIS:-/nonexistent}/bin/platforminfo ]] \
            || die "'platforminfo' (part of Vitis) not found: source the Vitis settings64.sh, or pass --part"
    fi
    for f in "${sources[@]}" "$VITIS/package_kernel.tcl" "$VITIS/mm2s.cpp" "$VITIS/s2mm.cpp" "$VITIS/link.cfg.in"; do
        [[ -f $f ]] || die "input file missing: $f"
    done
fi

run mkdir -p "$out/logs" "$out/reports"

# 1. The RTL kernel: wrapper + generated Verilog -> <out>/<kernel>_axis.xo.
run_in "$out" vivado -mode batch -notrace -nojournal -log "$out/logs/package_$top.log" \
    -source "$VITIS/package_kernel.tcl" \
    -tclargs "$top" "$out/$top.xo" "$part" "$platform" "${sources[@]}"

# 2. The HLS data movers.
for mover in mm2s s2mm; do
    run_in "$out" v++ -c -t "$target" --platform "$platform" -k "$mover" \
        --temp_dir "$out/_x.$mover" --log_dir "$out/logs" --report_dir "$out/reports" \
        -D "SPORK_MOVER_BITS=$mover_bits" -o "$out/$mover.xo" "$VITIS/$mover.cpp"
done

# 3. Link: mm2s -> kernel -> s2mm at the requested kernel clock.
run_to "$out/link.cfg" sed -e "s/@KERNEL@/$top/g" "$VITIS/link.cfg.in"
link=(v++ -l -t "$target" --platform "$platform" --config "$out/link.cfg" --kernel_frequency "$clock"
    --temp_dir "$out/_x.link" --log_dir "$out/logs" --report_dir "$out/reports"
    -o "$out/$xclbin" "$out/$top.xo" "$out/mm2s.xo" "$out/s2mm.xo")
run_in "$out" "${link[@]}"

# An emulation xclbin is not an image a worker can load: no manifest, nothing to install. A
# repository model's image is named by its model.toml ([fpga.alveo] xclbin), which times it by its
# [fpga.model]: no manifest either.
if [[ $target != hw || -n $package ]]; then
    [[ -z $package ]] || echo "# then: give the model [fpga.alveo] xclbin = \"$out/$xclbin\" (or --xclbin MODEL=FILE)"
    exit 0
fi

# 4. The manifest, beside the xclbin. Resources stay zero until someone copies them from the
# utilization report: v++ does not hand them over in a form worth parsing here.
manifest="$out/$kernel.toml"
if ((dry_run)); then
    echo "# then: write $manifest (source_sha256 of $kernel_v, clock_mhz $clock)"
else
    sha=$(sha256sum "$kernel_v")
    sha=${sha%% *}
    {
        echo "# Written by scripts/build-xclbin.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) for platform $platform."
        echo "# [resources] are placeholders: fill them from the utilization report under $out/reports."
        echo "name = $(toml_str "$kernel")"
        echo 'role = "kernel"'
        echo 'target = "alveo"'
        echo "file = $(toml_str "$xclbin")"
        echo "source = $(toml_str "../sim/$kernel.v")"
        echo "source_sha256 = $(toml_str "$sha")"
        echo "clock_mhz = $clock.0"
        echo 'clock_note = "requested kernel clock; see the v++ timing summary for the achieved clock"'
        echo 'items_per_cycle = 1.0'
        echo "item = $(toml_str "$item")"
        echo
        echo '[resources]'
        echo 'lut = 0'
        echo 'lutram = 0'
        echo 'ff = 0'
        echo 'dsp = 0'
        echo 'bram = 0.0'
        echo 'carry = 0'
        echo 'tool = "v++ (fill from the utilization report)"'
        echo "command = $(toml_str "$(quoted "${link[@]}")")"
        echo
        echo '[resources.cells]'
    } >"$manifest"
    echo "$PROG: wrote $manifest" >&2
fi

# 5. Install the Alveo image beside the other manifests; an F1 xclbin goes on to an AFI first.
if ((f1)); then
    echo "# next: $(quoted "$ROOT/scripts/build-afi.sh" --xclbin "$out/$xclbin" --bucket S3BUCKET)"
else
    run mkdir -p "$ROOT/bitstreams/alveo"
    run cp "$out/$xclbin" "$manifest" "$ROOT/bitstreams/alveo/"
fi
