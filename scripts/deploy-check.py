#!/usr/bin/env python3
"""The checks scripts/deploy-check.sh runs over rendered manifests (YAML streams).

  deploy-check.py compare A B          A and B hold the same objects (parsed, in order)
  deploy-check.py core IN OUT          OUT = IN less the objects of CRDs (named on stdout)
  deploy-check.py check --target NAME --board BOARD [--overlay DIR] FILE
      the rendered FILE is wired together: serve's config, probes and secrets; the headless
      Service serve.toml's `workers` names and the worker pods behind it; the worker's board
      flags; and, with --overlay, that the overlay's settings (fpga-worker.yaml, the images in
      kustomization.yaml) reached the containers unchanged.

Messages name the target and the object; the exit status is 1 when anything is wrong.
"""

import argparse
import posixpath
import re
import sys
import tomllib

import yaml

SERVE, SERVE_CONTAINER = "spork-serve", "serve"
CPU_WORKER, FPGA_WORKER, WORKER_CONTAINER = "spork-cpu-worker", "spork-fpga-worker", "worker"
SCHEDULER_SECRET, WORKER_SECRET = "spork-scheduler-tls", "spork-worker-tls"
MODELS = ("sobel", "bloom", "dense")


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def is_core(obj):
    """Core Kubernetes APIs (kubernetes-validate has their schemas); anything else is a CRD."""
    group = obj.get("apiVersion", "").rpartition("/")[0]
    return group == "" or "." not in group or group.endswith(".k8s.io")


def compare(a, b):
    left, right = load(a), load(b)
    if left == right:
        return 0
    for x, y in zip(left, right):
        if x != y:
            print(f"first difference: {x.get('kind')} {x['metadata'].get('name')} vs "
                  f"{y.get('kind')} {y['metadata'].get('name')}")
            break
    else:
        print(f"{len(left)} objects vs {len(right)}")
    return 1


def core(src, dst):
    docs = load(src)
    with open(dst, "w", encoding="utf-8") as f:
        yaml.safe_dump_all([d for d in docs if is_core(d)], f, sort_keys=False)
    for d in docs:
        if not is_core(d):
            print(f"{d['kind']} {d['metadata']['name']} ({d['apiVersion']})")
    return 0


def flags(args):
    """A container's args as {flag: [values]}: `--flag value` and `--flag=value` alike."""
    out, i = {}, 0
    while i < len(args):
        arg = str(args[i])
        if arg.startswith("--"):
            if "=" in arg:
                name, _, value = arg.partition("=")
                out.setdefault(name, []).append(value)
            elif i + 1 < len(args) and not str(args[i + 1]).startswith("--"):
                out.setdefault(arg, []).append(str(args[i + 1]))
                i += 1
            else:
                out.setdefault(arg, []).append(None)
        i += 1
    return out


def port_of(addr):
    host, _, port = addr.rpartition(":")
    return int(port) if port.isdigit() else None


def cpu_quantity(q):
    q = str(q)
    return int(q[:-1]) / 1000 if q.endswith("m") else float(q)


def under(path, mount):
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Checker:
    def __init__(self, target, docs):
        self.target = target
        self.docs = docs
        self.errors = []

    def fail(self, where, problem):
        self.errors.append(f"deploy-check [{self.target}]: {where}: {problem}")

    def find(self, kind, name):
        hits = [d for d in self.docs if d.get("kind") == kind and d["metadata"]["name"] == name]
        if len(hits) != 1:
            self.fail(f"{kind} {name}", f"{len(hits)} rendered, expected one")
            return None
        return hits[0]

    def container(self, workload, name):
        if workload is None:
            return None
        spec = workload["spec"]["template"]["spec"]
        hits = [c for c in spec.get("containers", []) if c.get("name") == name]
        if len(hits) != 1 or len(spec["containers"]) != 1:
            self.fail(f"{workload['kind']} {workload['metadata']['name']}",
                      f"expected the single container {name!r}, found "
                      f"{[c.get('name') for c in spec.get('containers', [])]} (a patch whose "
                      "container name does not match adds a container instead of changing it)")
            return None
        return hits[0]

    def mount_for(self, workload, container, path):
        """(the volumeMount that holds `path`, its volume), or (None, None)."""
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
        best = None
        for m in container.get("volumeMounts", []):
            if under(path, m["mountPath"]) and (best is None
                                                or len(m["mountPath"]) > len(best["mountPath"])):
                best = m
        return (best, volumes.get(best["name"])) if best else (None, None)

    def secret_file(self, workload, container, path, secret, what):
        where = f"{workload['kind']} {workload['metadata']['name']}"
        mount, volume = self.mount_for(workload, container, path)
        if volume is None or volume.get("secret", {}).get("secretName") != secret:
            self.fail(where, f"{what} {path} is not in a mount of the Secret {secret}")

    def port(self, container, port):
        """A probe's port (a number or a container port's name) as a number."""
        if isinstance(port, int):
            return port
        for p in container.get("ports", []):
            if p.get("name") == port:
                return p["containerPort"]
        return None

    def probe(self, where, container, kind, path, port):
        probe = container.get(kind)
        got = (probe or {}).get("httpGet", {})
        if got.get("path") != path or self.port(container, got.get("port")) != port:
            self.fail(where, f"{kind} is not GET {path} on port {port} (found {got or None})")

    def hardened(self, workload, container, root_allowed=False):
        where = f"{workload['kind']} {workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"].get("securityContext", {})
        sc = container.get("securityContext", {})
        if not sc.get("readOnlyRootFilesystem"):
            self.fail(where, "the root filesystem is not read-only")
        if root_allowed:
            return
        if not pod.get("runAsNonRoot") or pod.get("runAsUser") != 10001:
            self.fail(where, "the pod does not run as the non-root user 10001")
        if sc.get("runAsUser", 10001) != 10001 or sc.get("privileged"):
            self.fail(where, "the container runs as root or privileged")
        if "ALL" not in sc.get("capabilities", {}).get("drop", []):
            self.fail(where, "the container keeps capabilities (drop: [ALL])")

    # --- the checks -------------------------------------------------------------------------

    def namespace(self):
        names = [d["metadata"]["name"] for d in self.docs if d["kind"] == "Namespace"]
        if len(names) != 1:
            self.fail("Namespace", f"{len(names)} rendered, expected one")
            return None
        for d in self.docs:
            if d["kind"] != "Namespace" and d["metadata"].get("namespace") != names[0]:
                self.fail(f"{d['kind']} {d['metadata']['name']}",
                          f"in namespace {d['metadata'].get('namespace')}, not {names[0]}")
        return names[0]

    def mounts(self):
        """Every volumeMount names a volume of its pod (the API server would refuse the pod, and
        the schemas cannot tell)."""
        for d in self.docs:
            spec = d.get("spec", {}).get("template", {}).get("spec")
            if not spec:
                continue
            volumes = {v["name"] for v in spec.get("volumes", [])}
            for c in spec.get("containers", []) + spec.get("initContainers", []):
                for m in c.get("volumeMounts", []):
                    if m["name"] not in volumes:
                        self.fail(f"{d['kind']} {d['metadata']['name']}",
                                  f"container {c.get('name')} mounts {m['name']}, no such volume")

    def serve(self):
        """serve's Deployment: its config file from the generated ConfigMap, probes on the ports
        serve.toml listens on, secrets where serve.toml reads them. Returns serve.toml."""
        dep = self.find("Deployment", SERVE)
        c = self.container(dep, SERVE_CONTAINER)
        if c is None:
            return None
        where = f"Deployment {SERVE}"
        config = (flags(c.get("args", [])).get("--config") or [None])[0]
        if c.get("args", [None])[0] != "serve" or not config:
            self.fail(where, f"args {c.get('args')} are not `serve --config FILE`")
            return None
        mount, volume = self.mount_for(dep, c, config)
        name = (volume or {}).get("configMap", {}).get("name")
        maps = [d for d in self.docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name]
        if not maps:
            self.fail(where, f"--config {config} is not in a mount of a rendered ConfigMap "
                             f"(volume {volume})")
            return None
        key = mount.get("subPath") or posixpath.relpath(config, mount["mountPath"])
        text = maps[0].get("data", {}).get(key)
        if text is None:
            self.fail(f"ConfigMap {name}", f"has no key {key} for --config {config}")
            return None
        try:
            toml = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            self.fail(f"ConfigMap {name}", f"{key} is not TOML: {e}")
            return None
        http, grpc = port_of(toml.get("http", "")), port_of(toml.get("grpc", ""))
        for field, port in (("http", http), ("grpc", grpc)):
            addr = toml.get(field, "")
            if not addr.startswith("0.0.0.0:") or port not in [
                    p["containerPort"] for p in c.get("ports", [])]:
                self.fail(where, f"serve.toml {field} = {addr!r} is not 0.0.0.0 on a container "
                                 "port (the default 127.0.0.1 is unreachable from the Service)")
        self.probe(where, c, "readinessProbe", "/v2/health/ready", http)
        self.probe(where, c, "livenessProbe", "/v2/health/live", http)
        tls = toml.get("worker_tls", {})
        if toml.get("insecure_workers"):
            self.fail(where, "serve.toml sets insecure_workers: workers are reached over mutual TLS")
        for field in ("cert", "key", "ca"):
            if field not in tls:
                self.fail(where, f"serve.toml has no worker_tls.{field}")
            else:
                self.secret_file(dep, c, tls[field], SCHEDULER_SECRET, f"worker_tls.{field}")
        if "token_file" in toml:
            self.secret_file(dep, c, toml["token_file"], "spork-token", "token_file")
        self.hardened(dep, c)
        svc = self.find("Service", SERVE)
        if svc:
            labels = dep["spec"]["template"]["metadata"].get("labels", {})
            if not selects(svc["spec"].get("selector"), labels):
                self.fail(f"Service {SERVE}", "does not select serve's pods")
            ports = {p["port"] for p in svc["spec"].get("ports", [])}
            if not {http, grpc} <= ports:
                self.fail(f"Service {SERVE}", f"ports {sorted(ports)} lack {http} and {grpc}")
            notes = svc["metadata"].get("annotations", {})
            if notes.get("prometheus.io/port") != str(http) or \
                    notes.get("prometheus.io/path") != "/metrics":
                self.fail(f"Service {SERVE}", "prometheus.io annotations are not /metrics on "
                                              f"port {http}")
        return toml

    def workers(self, toml, namespace):
        """serve.toml's `workers = "dns:NAME:PORT"` resolves through a headless Service in this
        namespace to every worker pod, which listens on PORT with mutual TLS."""
        spec = (toml or {}).get("workers", "")
        m = re.fullmatch(r"dns:([a-z0-9.-]+):(\d+)", spec)
        if not m:
            self.fail(f"Deployment {SERVE}", f"serve.toml workers = {spec!r} is not dns:NAME:PORT")
            return
        name, port = m.group(1), int(m.group(2))
        parts = name.split(".")
        if len(parts) > 1 and parts[1] != namespace:
            self.fail(f"Deployment {SERVE}", f"serve.toml workers names namespace {parts[1]}, "
                                             f"the objects are in {namespace}")
        services = [d for d in self.docs if d["kind"] == "Service"
                    and d["metadata"]["name"] == parts[0]]
        if len(services) != 1:
            self.fail(f"Deployment {SERVE}", f"serve.toml workers names the Service {parts[0]}, "
                                             "which is not rendered")
            return
        svc = services[0]
        where = f"Service {parts[0]}"
        if svc["spec"].get("clusterIP") != "None" or svc["spec"].get("publishNotReadyAddresses"):
            self.fail(where, "is not headless (clusterIP: None) over ready pods only")
        if port not in [p["port"] for p in svc["spec"].get("ports", [])]:
            self.fail(where, f"has no port {port}")
        for kind, wname in (("Deployment", CPU_WORKER), ("DaemonSet", FPGA_WORKER)):
            workload = self.find(kind, wname)
            c = self.container(workload, WORKER_CONTAINER)
            if c is None:
                continue
            wwhere = f"{kind} {wname}"
            if not selects(svc["spec"].get("selector"),
                           workload["spec"]["template"]["metadata"].get("labels", {})):
                self.fail(where, f"does not select the pods of {wwhere}")
            f = flags(c.get("args", []))
            if c.get("args", [None])[0] != "worker":
                self.fail(wwhere, f"args {c.get('args')} do not start with `worker`")
            listen = (f.get("--listen") or [""])[0]
            if port_of(listen) != port or not listen.startswith("0.0.0.0:"):
                self.fail(wwhere, f"--listen {listen} is not 0.0.0.0:{port}")
            if port not in [p["containerPort"] for p in c.get("ports", [])]:
                self.fail(wwhere, f"no container port {port}")
            probe = port_of((f.get("--probe") or [""])[0])
            self.probe(wwhere, c, "readinessProbe", "/readyz", probe)
            self.probe(wwhere, c, "livenessProbe", "/livez", probe)
            if "--insecure" in f:
                self.fail(wwhere, "--insecure: workers take mutual TLS only")
            for flag in ("--tls-cert", "--tls-key", "--tls-ca"):
                value = (f.get(flag) or [None])[0]
                if not value:
                    self.fail(wwhere, f"no {flag}")
                else:
                    self.secret_file(workload, c, value, WORKER_SECRET, flag)
            if wname == CPU_WORKER:
                self.cpu_worker(workload, c, f)

    def cpu_worker(self, workload, c, f):
        where = f"Deployment {CPU_WORKER}"
        if f.get("--board") != ["cpu"]:
            self.fail(where, f"--board {f.get('--board')} is not cpu")
        slots = (f.get("--cpu-slots") or [None])[0]
        limit = c.get("resources", {}).get("limits", {}).get("cpu")
        if slots is None or limit is None or int(slots) > cpu_quantity(limit):
            self.fail(where, f"--cpu-slots {slots} exceeds the CPU limit {limit}")
        self.hardened(workload, c)

    def fpga_worker(self, board, models):
        """The worker's board flags: one image per served model, and on a real board the host's
        XRT mounted where XILINX_XRT and LD_LIBRARY_PATH point."""
        ds = self.find("DaemonSet", FPGA_WORKER)
        c = self.container(ds, WORKER_CONTAINER)
        if c is None:
            return
        where = f"DaemonSet {FPGA_WORKER}"
        f = flags(c.get("args", []))
        if f.get("--board") != [board]:
            self.fail(where, f"--board {f.get('--board')} is not {board}")
            return
        if board == "model":
            self.hardened(ds, c)
            return
        per_kernel = {}
        for value in f.get("--xclbin", []):
            kernel, _, path = value.rpartition("=")
            per_kernel[kernel or "*"] = path
            if not path.startswith("/"):
                self.fail(where, f"--xclbin {value}: not an absolute path")
        for model in models:
            if model not in per_kernel and "*" not in per_kernel:
                self.fail(where, f"no --xclbin for the served model {model}")
        env = {e["name"]: e.get("value", "") for e in c.get("env", [])}
        xrt = env.get("XILINX_XRT")
        paths = [xrt] + (env.get("LD_LIBRARY_PATH") or "").split(":") if xrt else []
        if not xrt:
            self.fail(where, "XILINX_XRT is not set (XRT aborts the process without it)")
        for path in filter(None, paths):
            mount, volume = self.mount_for(ds, c, path)
            if volume is None or "hostPath" not in volume:
                self.fail(where, f"{path} (XILINX_XRT, LD_LIBRARY_PATH) is not in a host mount")
        if not any(v.get("hostPath", {}).get("path") == "/opt/xilinx"
                   for v in ds["spec"]["template"]["spec"].get("volumes", [])):
            self.fail(where, "the host's /opt/xilinx (XRT) is not mounted")
        limits = c.get("resources", {}).get("limits", {})
        plugin = [k for k in limits if k.startswith(("xilinx.com/fpga-", "amd.com/"))]
        if len(plugin) != 1 or int(limits[plugin[0]]) < 1:
            self.fail(where, f"resources.limits {limits} request no FPGA device plugin resource "
                             "(xilinx.com/fpga-<shell>-<timestamp>)")
        if board == "alveo":
            self.hardened(ds, c)
        if board == "f1":
            for model in models:
                agfis = {v.rpartition("=")[0] or "*": v.rpartition("=")[2]
                         for v in f.get("--agfi", [])}
                agfi = agfis.get(model, agfis.get("*"))
                if not agfi or not re.fullmatch(r"agfi-[0-9a-fA-F]{17}", agfi):
                    self.fail(where, f"--agfi for {model}: {agfi} is not agfi-<17 hex digits>")
            if not (f.get("--slot") or [""])[0].isdigit():
                self.fail(where, "no --slot N")
            if not c.get("securityContext", {}).get("privileged"):
                self.fail(where, "not privileged: libfpga_mgmt writes the slot's PCI resources "
                                 "under /sys")
            self.hardened(ds, c, root_allowed=True)

    def overlay(self, directory):
        """What the overlay sets reached the containers unchanged."""
        patch_path = posixpath.join(directory, "fpga-worker.yaml")
        patch = load(patch_path)[0]
        ds = self.find("DaemonSet", patch["metadata"]["name"])
        where = f"DaemonSet {FPGA_WORKER} vs {patch_path}"
        spec = patch["spec"]["template"]["spec"]
        rendered = ds["spec"]["template"]["spec"] if ds else {}
        for key, value in spec.get("nodeSelector", {}).items():
            if rendered.get("nodeSelector", {}).get(key) != value:
                self.fail(where, f"nodeSelector {key}={value} did not reach the pod")
        for pc in spec.get("containers", []):
            c = self.container(ds, pc["name"])
            if c is None:
                continue
            if "args" in pc and c.get("args") != pc["args"]:
                self.fail(where, f"container {pc['name']}: args differ from the overlay's")
            for key, value in pc.get("resources", {}).get("limits", {}).items():
                if c.get("resources", {}).get("limits", {}).get(key) != value:
                    self.fail(where, f"resources.limits {key}: {value} did not reach the container")
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            for e in pc.get("env", []):
                if env.get(e["name"]) != e.get("value"):
                    self.fail(where, f"env {e['name']} did not reach the container")
            mounts = {(m["name"], m["mountPath"]) for m in c.get("volumeMounts", [])}
            for m in pc.get("volumeMounts", []):
                if (m["name"], m["mountPath"]) not in mounts:
                    self.fail(where, f"volumeMount {m['mountPath']} did not reach the container")
        volumes = {v["name"]: v for v in rendered.get("volumes", [])}
        for v in spec.get("volumes", []):
            if volumes.get(v["name"]) != v:
                self.fail(where, f"volume {v['name']} did not reach the pod")
        kust = load(posixpath.join(directory, "kustomization.yaml"))[0]
        want = {i["name"]: f"{i.get('newName', i['name'])}:{i['newTag']}"
                for i in kust.get("images", []) if "newTag" in i}
        for kind, name, image in (("Deployment", SERVE, "spork"),
                                  ("Deployment", CPU_WORKER, "spork"),
                                  ("DaemonSet", FPGA_WORKER, "spork-fpga")):
            w = self.find(kind, name)
            for c in (w["spec"]["template"]["spec"]["containers"] if w else []):
                if image in want and "image" in c and c["image"] != want[image]:
                    self.fail(f"{kind} {name}", f"image {c.get('image')} is not the overlay's "
                                                f"{want[image]}")

    def monitors(self):
        svc = self.find("Service", SERVE)
        for sm in [d for d in self.docs if d["kind"] == "ServiceMonitor"]:
            where = f"ServiceMonitor {sm['metadata']['name']}"
            if svc is None:
                return
            if not selects(sm["spec"].get("selector", {}).get("matchLabels"),
                           svc["metadata"].get("labels", {})):
                self.fail(where, f"does not select the Service {SERVE}")
            names = {p.get("name") for p in svc["spec"].get("ports", [])}
            for ep in sm["spec"].get("endpoints", []):
                if ep.get("port") not in names or ep.get("path") != "/metrics":
                    self.fail(where, f"endpoint {ep} is not /metrics on a named port of "
                                     f"{SERVE} {sorted(names)}")


def check(opts):
    c = Checker(opts.target, load(opts.file))
    namespace = c.namespace()
    c.mounts()
    toml = c.serve()
    c.workers(toml, namespace)
    models = (toml or {}).get("models", list(MODELS))
    c.fpga_worker(opts.board, models)
    if opts.overlay:
        c.overlay(opts.overlay)
    c.monitors()
    for e in dict.fromkeys(c.errors):  # each once, in order
        print(e, file=sys.stderr)
    return 1 if c.errors else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    p = sub.add_parser("core")
    p.add_argument("src")
    p.add_argument("dst")
    p = sub.add_parser("check")
    p.add_argument("--target", required=True)
    p.add_argument("--board", required=True, choices=["model", "alveo", "f1"])
    p.add_argument("--overlay")
    p.add_argument("file")
    opts = parser.parse_args(argv[1:])
    if opts.command == "compare":
        return compare(opts.a, opts.b)
    if opts.command == "core":
        return core(opts.src, opts.dst)
    return check(opts)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
