"""Spork and a real Triton server side by side on one machine, same `sobel` model, same clients.

For each run and each server (spork serve with SporkE and with CPU-dynamic; Triton 2.51 with the
C++ backend of spork_sobel_backend.cc; Triton with a Python model), on loopback ports:
  1. start it and wait until `sobel` is ready;
  2. lone requests: the Python tritonclient, HTTP and gRPC, 16x16 and 256x256 images, one in
     flight, every answer checked (lone.py);
  3. load: `spork load` (open loop, 1 ms requests, 10 ms deadline) at each rate for --step seconds,
     with the load generator's own CPU time (user + system) read from its rusage; the requests'
     size is fixed by the first step's calibration (or --items-per-sec) for every step and server;
     with --priority realtime, the load generator and each server run at the lowest real-time level
     (spork's --io-priority; Triton, which has no such setting, whole under `chrt -f 1`);
  4. stop it.
Writes every measurement as a JSON line to OUT/measurements.jsonl and prints the summary tables
(medians over the runs, and the spread) that summarise.py makes. Run through side-by-side.sh.
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
HTTP, GRPC = 18600, 18601


def wait_ready(proc, timeout_s=120):
    url = f"http://127.0.0.1:{HTTP}/v2/models/sobel/ready"
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode} before `sobel` was ready")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"`sobel` not ready after {timeout_s} s")


def start(server, a, env):
    """The server's process, listening on loopback only."""
    if server.startswith("spork"):
        scheduler = "cpu-dynamic" if server == "spork-cpu" else "spork-e"
        cmd = [a.spork, "serve", "--models", "sobel", "--scheduler", scheduler,
               "--http", f"127.0.0.1:{HTTP}", "--grpc", f"127.0.0.1:{GRPC}",
               "--io-priority", a.priority] + a.spork_arg
        child_env = None
    else:
        repo = "cpp" if server == "triton-cpp" else "python"
        cmd = [env["TRITONSERVER"], "--model-repository", os.path.join(a.triton_dir, repo),
               "--backend-directory", os.path.join(a.triton_dir, "backends"),
               "--http-address", "127.0.0.1", "--http-port", str(HTTP),
               "--grpc-address", "127.0.0.1", "--grpc-port", str(GRPC),
               "--allow-metrics", "false", "--log-warning", "false"]
        child_env = dict(os.environ, LD_LIBRARY_PATH=f"{env['TRITON_LIBS']}:{env['PYTHON_LIBDIR']}")
        if a.priority == "realtime":
            cmd = ["chrt", "-f", "1"] + cmd
    log = open(os.path.join(a.out, f"{server}.log"), "ab")
    return subprocess.Popen(cmd, stdout=log, stderr=log, env=child_env, start_new_session=True)


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def lone(a, server, protocol, size):
    port = HTTP if protocol == "http" else GRPC
    out = subprocess.run([sys.executable, os.path.join(HERE, "lone.py"), "--url", f"127.0.0.1:{port}",
                          "--protocol", protocol, "--size", size, "--requests", str(a.requests),
                          "--label", server], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"lone.py against {server} ({protocol}, {size}) failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load(a, rate):
    """One `spork load` step and the CPU time the load generator itself used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pin = ["--items-per-sec", repr(a.items_per_sec)] if a.items_per_sec else []
    out = subprocess.run([a.spork, "load", "--target", f"127.0.0.1:{HTTP}", "--model", "sobel",
                          "--rate", str(rate), "--duration", f"{a.step}s", "--burstiness", "0.5",
                          "--size", "1ms", "--deadline-ms", "10", "--priority", a.priority, "--json", *pin],
                         capture_output=True, text=True, timeout=a.step * 3 + 60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"spork load at {rate}/s failed:\n{out.stderr}")
    r = json.loads(out.stdout)
    # Every later step, on every server, sends requests of the size this first one measured: the
    # load generator's calibration moved by up to a third between runs here, and the tail with it.
    a.items_per_sec = a.items_per_sec or r["items_per_sec"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    errors = sum(r["errors"].values())
    return {"ok": r["ok"], "errors": errors, "missed": r["missed"], "p50_ms": r["latency_ms"]["p50"],
            "p99_ms": r["latency_ms"]["p99"], "loadgen_cores": cpu / a.step, "items": r["mean_items"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spork", required=True, help="the spork binary (a release build)")
    ap.add_argument("--spork-arg", action="append", default=[], help="one more `spork serve` argument")
    ap.add_argument("--triton-dir", required=True, help="what setup.sh prepared")
    ap.add_argument("--out", required=True, help="where measurements and server logs go")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step", type=int, default=10, help="seconds per load step")
    ap.add_argument("--rates", default="400,800,1200,1600")
    ap.add_argument("--python-rates", default="400", help="rates for Triton's Python model")
    ap.add_argument("--requests", type=int, default=1000, help="lone requests per case")
    ap.add_argument("--servers", default="spork,spork-cpu,triton-cpp,triton-python")
    ap.add_argument("--items-per-sec", type=float, default=None,
                    help="the speed that sizes 1 ms requests [default: the first load step's calibration, "
                         "then kept for every step and server]")
    ap.add_argument("--priority", choices=["normal", "realtime"], default="normal",
                    help="the load generator's and the servers' scheduling (realtime: needs root or CAP_SYS_NICE)")
    a = ap.parse_args()
    if a.priority == "realtime":
        # Refused, it would look like a server that did not start: say so first.
        probe = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise SystemExit(f"--priority realtime: real-time threads are refused here ({probe.stderr.strip()}); "
                             "run as root or with CAP_SYS_NICE, or leave --priority out")
    os.makedirs(a.out, exist_ok=True)
    env = dict(line.strip().split("=", 1) for line in open(os.path.join(a.triton_dir, "env.sh")) if "=" in line)
    env = {k: v.strip('"') for k, v in env.items()}
    sink = open(os.path.join(a.out, "measurements.jsonl"), "a")
    for run in range(1, a.runs + 1):
        for server in a.servers.split(","):
            proc = start(server, a, env)
            try:
                wait_ready(proc)
                time.sleep(2)  # SporkE's board spins up in 1 s; let every server settle alike
                for protocol in ("http", "grpc"):
                    for size in ("16x16", "256x256"):
                        m = dict(lone(a, server, protocol, size), kind="lone", run=run, server=server)
                        sink.write(json.dumps(m) + "\n")
                        sink.flush()
                        print(f"run {run} {server:13} lone {protocol:4} {size:7}  p50 {m['p50_ms']:.3f}  "
                              f"p99 {m['p99_ms']:.3f} ms", flush=True)
                rates = a.python_rates if server == "triton-python" else a.rates
                for rate in (int(r) for r in rates.split(",") if r):
                    m = dict(load(a, rate), kind="load", run=run, server=server, rate=rate)
                    sink.write(json.dumps(m) + "\n")
                    sink.flush()
                    print(f"run {run} {server:13} load {rate:5}/s  p50 {m['p50_ms']:.2f}  p99 {m['p99_ms']:.2f} ms  "
                          f"answered {m['ok']}  missed {m['missed']}  errors {m['errors']}  "
                          f"load generator {m['loadgen_cores']:.2f} cores", flush=True)
            finally:
                stop(proc)
    sink.close()
    subprocess.run([sys.executable, os.path.join(HERE, "summarise.py"), os.path.join(a.out, "measurements.jsonl")],
                   check=True)


if __name__ == "__main__":
    main()
