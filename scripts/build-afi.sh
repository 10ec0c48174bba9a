#!/usr/bin/env bash
# Turns an xclbin built for the AWS F1 shell (scripts/build-xclbin.sh --platform $AWS_PLATFORM) into
# an Amazon FPGA Image with the aws-fpga repository's create_vitis_afi.sh, waits until AWS reports
# it available, and records it as bitstreams/f1/<kernel>.{awsxclbin,toml,ids} (the manifest's
# `agfi` is what `spork run --board f1` loads).
# Needs the aws-fpga repo set up for Vitis (source $AWS_FPGA_REPO_DIR/vitis_setup.sh), the AWS CLI
# with credentials allowed to create FPGA images, and an S3 bucket. See scripts/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROG="${0##*/}"
readonly ROOT PROG
readonly POLL_SECONDS=60 MAX_WAIT_SECONDS=$((6 * 3600))

usage() {
    cat <<EOF
usage: $PROG --xclbin FILE --bucket S3BUCKET [--prefix P] [--region R]
                    [--kernel K] [--clock MHZ] [--out DIR] [--dry-run]

  --xclbin     the F1 xclbin (<out>/<kernel>.hw.xclbin from build-xclbin.sh)
  --bucket     S3 bucket that receives the design checkpoint tarball and the AFI logs
  --prefix     S3 key prefix (default: spork); keys <prefix>/<kernel>/dcp and <prefix>/<kernel>/logs
  --region     AWS region for the AFI (default: the AWS CLI's configured region)
  --kernel     sobel, bloom or dense (default: the xclbin's name up to its first dot)
  --clock      kernel clock in MHz for the manifest (default: clock_mhz of the manifest
               build-xclbin.sh wrote beside the xclbin)
  --out        work directory for create_vitis_afi.sh (default: build/afi/<kernel>.<UTC time>)
  --dry-run    print the commands, one per line, instead of running them (no polling)
  -h, --help   this help

Runs \$AWS_FPGA_REPO_DIR/Vitis/tools/create_vitis_afi.sh, prints the AFI and AGFI ids from its
*_afi_id.txt, copies the .awsxclbin to bitstreams/f1/ and the ids to bitstreams/f1/<kernel>.ids,
polls 'aws ec2 describe-fpga-images' every ${POLL_SECONDS}s (up to $((MAX_WAIT_SECONDS / 3600)) h) until
the AFI is available, then writes bitstreams/f1/<kernel>.toml.
EOF
}

die() {
    echo "$PROG: error: $*" >&2
    exit 1
}

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

need_value() {
    [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"
}

toml_str() {
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

# toml_value FILE KEY: the raw value of a top-level `KEY = value` line.
toml_value() {
    sed -n "s/^$2 = //p" "$1" | head -n 1
}

xclbin="" bucket="" prefix=spork region="" kernel="" clock="" out="" dry_run=0
while (($#)); do
    case $1 in
        --xclbin) need_value "$@"; xclbin=$2; shift 2 ;;
        --bucket) need_value "$@"; bucket=$2; shift 2 ;;
        --prefix) need_value "$@"; prefix=$2; shift 2 ;;
        --region) need_value "$@"; region=$2; shift 2 ;;
        --kernel) need_value "$@"; kernel=$2; shift 2 ;;
        --clock) need_value "$@"; clock=$2; shift 2 ;;
        --out) need_value "$@"; out=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

[[ -n $xclbin ]] || die "--xclbin is required"
[[ -n $bucket ]] || die "--bucket is required (an S3 bucket name, without s3://)"
[[ $bucket != s3://* ]] || die "give --bucket as a bare name, without s3://"
[[ $xclbin == /* ]] || xclbin="$PWD/$xclbin"
xclbin_name=${xclbin##*/}
kernel=${kernel:-${xclbin_name%%.*}}
case $kernel in
    sobel) item="pixel" ;;
    bloom) item="term" ;;
    dense) item="input element" ;;
    *) die "kernel '$kernel' is not sobel, bloom or dense (pass --kernel)" ;;
esac
prefix=${prefix%/}
dcp_key="$prefix/$kernel/dcp"
logs_key="$prefix/$kernel/logs"
out=${out:-$ROOT/build/afi/$kernel.$(date -u +%Y%m%dT%H%M%SZ)}
[[ $out == /* ]] || out="$PWD/$out"
f1_dir="$ROOT/bitstreams/f1"

# What the image was built from: the manifest build-xclbin.sh wrote beside the xclbin, if it is
# this xclbin's; otherwise the current Verilog and --clock.
beside="${xclbin%/*}/$kernel.toml"
if [[ -f $beside && $(toml_value "$beside" file) == "\"$xclbin_name\"" ]]; then
    source_sha=$(toml_value "$beside" source_sha256)
    source_sha=${source_sha//\"/}
    clock=${clock:-$(toml_value "$beside" clock_mhz)}
else
    beside=""
fi
if [[ -n $clock ]]; then
    [[ $clock =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--clock must be a frequency in MHz, not '$clock'"
    [[ $clock == *.* ]] || clock="$clock.0"
fi

create="${AWS_FPGA_REPO_DIR:-}/Vitis/tools/create_vitis_afi.sh"
if ((!dry_run)); then
    [[ -f $xclbin ]] || die "xclbin not found: $xclbin"
    [[ -n $clock ]] || die "no manifest beside $xclbin_name: give its kernel clock with --clock"
    [[ -n ${AWS_FPGA_REPO_DIR:-} ]] || die "AWS_FPGA_REPO_DIR is not set: clone aws-fpga and source its vitis_setup.sh"
    [[ -x $create ]] || die "not found or not executable: $create"
    [[ -n ${RELEASE_VER:-} ]] || die "RELEASE_VER is not set: source \$AWS_FPGA_REPO_DIR/vitis_setup.sh"
    command -v aws >/dev/null || die "'aws' (the AWS CLI) not found on PATH"
    # create_vitis_afi.sh calls XRT's xclbinutil by this absolute path.
    [[ -x /opt/xilinx/xrt/bin/xclbinutil ]] || die "/opt/xilinx/xrt/bin/xclbinutil not found: install XRT"
    command -v sha256sum >/dev/null || die "'sha256sum' not found on PATH"
elif [[ -z ${AWS_FPGA_REPO_DIR:-} ]]; then
    create="/path/to/aws-fpga/Vitis/tools/create_vitis_afi.sh"
    echo "# AWS_FPGA_REPO_DIR is not set: /path/to/aws-fpga stands for it"
fi

# The AWS CLI's region: create_vitis_afi.sh takes it from the environment.
region_env=() region_arg=()
if [[ -n $region ]]; then
    region_env=(env "AWS_DEFAULT_REGION=$region")
    region_arg=(--region "$region")
fi

# 1. Upload the design checkpoint and start the AFI build; -o names the .awsxclbin (no extension).
run mkdir -p "$out"
run_in "$out" "${region_env[@]}" "$create" "-xclbin=$xclbin" "-o=$kernel" \
    "-s3_bucket=$bucket" "-s3_dcp_key=$dcp_key" "-s3_logs_key=$logs_key"
describe=(aws ec2 describe-fpga-images "${region_arg[@]}" --fpga-image-ids)

# 2. The ids. create_vitis_afi.sh can stop early and still exit 0: check that it produced them.
if ((dry_run)); then
    echo "# then: read the AFI and AGFI ids from $out/*_afi_id.txt"
else
    ids_files=("$out"/*_afi_id.txt)
    ids_file=${ids_files[-1]}
    [[ -f $ids_file ]] || die "create_vitis_afi.sh wrote no *_afi_id.txt in $out (see its output above)"
    [[ -f $out/$kernel.awsxclbin ]] || die "create_vitis_afi.sh wrote no $kernel.awsxclbin in $out (see its output above)"
    afi=$(sed -n 's/.*"FpgaImageId": *"\([^"]*\)".*/\1/p' "$ids_file" | head -n 1)
    agfi=$(sed -n 's/.*"FpgaImageGlobalId": *"\([^"]*\)".*/\1/p' "$ids_file" | head -n 1)
    [[ $afi == afi-* && $agfi == agfi-* ]] || die "no AFI/AGFI ids in $ids_file (create-fpga-image failed?)"
    echo "AFI:  $afi"
    echo "AGFI: $agfi"
fi
run mkdir -p "$f1_dir"
run cp "$out/$kernel.awsxclbin" "$f1_dir/"
if ((dry_run)); then
    echo "# then: write $f1_dir/$kernel.ids (afi=..., agfi=...)"
    echo "# then: poll every ${POLL_SECONDS}s until it prints available: $(quoted "${describe[@]}" AFI_ID --query 'FpgaImages[0].State.Code' --output text)"
    echo "# then: write $f1_dir/$kernel.toml"
    exit 0
fi
printf 'afi=%s\nagfi=%s\n' "$afi" "$agfi" >"$f1_dir/$kernel.ids"
echo "$PROG: wrote $f1_dir/$kernel.ids" >&2

# 3. AWS builds the AFI asynchronously: wait until it is available (or failed).
waited=0
while :; do
    state=$("${describe[@]}" "$afi" --query 'FpgaImages[0].State.Code' --output text)
    case $state in
        available) break ;;
        pending) ;;
        *) die "AFI $afi is '$state': see the logs at s3://$bucket/$logs_key/" ;;
    esac
    ((waited < MAX_WAIT_SECONDS)) || die "AFI $afi still pending after $((waited / 60)) min; rerun the poll with: $(quoted "${describe[@]}" "$afi")"
    echo "$PROG: $afi is pending ($((waited / 60)) min)" >&2
    sleep "$POLL_SECONDS"
    waited=$((waited + POLL_SECONDS))
done
echo "$PROG: $afi is available" >&2

# 4. The manifest. Resources: the ones recorded beside the xclbin (filled in or placeholders).
if [[ -z $beside ]]; then
    source_sha=$(sha256sum "$ROOT/bitstreams/sim/$kernel.v")
    source_sha=${source_sha%% *}
    echo "$PROG: warning: no manifest beside $xclbin_name; source_sha256 is the current $kernel.v's" >&2
fi
manifest="$f1_dir/$kernel.toml"
{
    echo "# Written by scripts/build-afi.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) from $xclbin_name."
    echo "# AFI $afi (the regional id; bitstreams/f1/$kernel.ids holds both)."
    echo "name = $(toml_str "$kernel")"
    echo 'role = "kernel"'
    echo 'target = "f1"'
    echo "file = $(toml_str "$kernel.awsxclbin")"
    echo "source = $(toml_str "../sim/$kernel.v")"
    echo "source_sha256 = $(toml_str "$source_sha")"
    echo "clock_mhz = $clock"
    echo 'clock_note = "requested kernel clock; see the v++ timing summary for the achieved clock"'
    echo 'items_per_cycle = 1.0'
    echo "item = $(toml_str "$item")"
    # The global id is what an F1 instance loads (fpga-load-local-image, `spork run --board f1`).
    echo "agfi = $(toml_str "$agfi")"
    echo
    if [[ -n $beside ]]; then
        sed -n '/^\[resources\]$/,$p' "$beside"
    else
        echo '[resources]'
        echo 'lut = 0'
        echo 'lutram = 0'
        echo 'ff = 0'
        echo 'dsp = 0'
        echo 'bram = 0.0'
        echo 'carry = 0'
        echo 'tool = "v++ (fill from the utilization report)"'
        echo 'command = "unknown: the xclbin was not built by scripts/build-xclbin.sh"'
        echo
        echo '[resources.cells]'
    fi
} >"$manifest"
echo "$PROG: wrote $manifest" >&2
