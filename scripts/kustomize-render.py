#!/usr/bin/env python3
"""Renders a kustomization directory to YAML on stdout, as `kubectl kustomize DIR` does, for
machines without kubectl. Usage: kustomize-render.py DIR

It implements only what deploy/ uses, and refuses anything else by name rather than render it
wrongly: `resources` (files and directories), `components`, `configMapGenerator` (files and
literals; the name gets kustomize's content hash and references in pod specs follow it),
`patches` (strategic-merge patches by path or inline, matched by kind and name), `namespace`,
`labels` (pairs, includeSelectors false, includeTemplates) and `images`. The phases run in
kustomize's order: resources, components, generators, then patches, namespace, labels, images.
scripts/deploy-check.sh compares its output with kubectl's wherever kubectl exists.

Needs PyYAML (in the venv scripts/python-env.sh makes).
"""

import copy
import hashlib
import json
import os
import sys

import yaml

FIELDS = {"apiVersion", "kind", "resources", "components", "namespace", "labels", "images",
          "patches", "configMapGenerator"}

# Kinds the namespace transformer leaves alone (kustomize renames a Namespace to the namespace).
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PersistentVolume", "StorageClass", "PriorityClass", "IngressClass",
                  "RuntimeClass", "MutatingWebhookConfiguration",
                  "ValidatingWebhookConfiguration", "APIService", "CSIDriver"}

# Workloads whose pod template `labels` with includeTemplates reaches.
TEMPLATED = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job",
             "ReplicationController"}

# kustomize's legacy output order: these kinds first, in this order; the rest after them.
ORDER_FIRST = ["Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
               "ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
               "ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service", "LimitRange",
               "PriorityClass", "PersistentVolume", "PersistentVolumeClaim", "Deployment",
               "StatefulSet", "CronJob", "PodDisruptionBudget"]
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


class RenderError(Exception):
    pass


class Res:
    """One object, and for a generated ConfigMap the name its references use until hashing."""

    def __init__(self, obj, generated=False):
        self.obj = obj
        self.generated = generated
        self.original_name = obj["metadata"]["name"]

    def kind(self):
        return self.obj.get("kind")

    def name(self):
        return self.obj["metadata"]["name"]

    def namespace(self):
        return self.obj["metadata"].get("namespace")


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def load_kustomization(d, kind):
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        path = os.path.join(d, name)
        if os.path.isfile(path):
            break
    else:
        raise RenderError(f"{d}: no kustomization.yaml")
    docs = load_docs(path)
    k = docs[0] if docs else {}
    if not isinstance(k, dict):
        raise RenderError(f"{path}: not a mapping")
    unknown = set(k) - FIELDS
    if unknown:
        raise RenderError(f"{path}: {', '.join(sorted(unknown))}: not supported by this renderer "
                          "(use kubectl kustomize, or extend scripts/kustomize-render.py)")
    found = k.get("kind", "Kustomization")
    if found != kind:
        raise RenderError(f"{path}: kind {found} where a {kind} is expected")
    return k


def accumulate(d, k, res):
    """Adds the objects of kustomization `k` (in folder `d`) to `res` and transforms them all."""
    for entry in k.get("resources", []):
        path = os.path.normpath(os.path.join(d, entry))
        if os.path.isdir(path):
            res.extend(build(path))
        elif os.path.isfile(path):
            for doc in load_docs(path):
                res.append(Res(doc))
        else:
            raise RenderError(f"{d}: resource {entry} not found")
    for entry in k.get("components", []):
        path = os.path.normpath(os.path.join(d, entry))
        accumulate(path, load_kustomization(path, "Component"), res)
    for gen in k.get("configMapGenerator", []):
        res.append(generate_configmap(d, gen))
    for patch in k.get("patches", []):
        apply_patch(d, patch, res)
    if "namespace" in k:
        set_namespace(k["namespace"], res)
    for labels in k.get("labels", []):
        add_labels(labels, res)
    for image in k.get("images", []):
        set_image(image, res)


def build(d):
    res = []
    accumulate(d, load_kustomization(d, "Kustomization"), res)
    return res


def generate_configmap(d, gen):
    unknown = set(gen) - {"name", "files", "literals"}
    if unknown:
        raise RenderError(f"{d}: configMapGenerator {gen.get('name')}: "
                          f"{', '.join(sorted(unknown))} not supported")
    data = {}
    for entry in gen.get("files", []):
        key, _, path = entry.rpartition("=") if "=" in entry else ("", "", entry)
        key = key or os.path.basename(path)
        with open(os.path.join(d, path), encoding="utf-8") as f:
            data[key] = f.read()
    for entry in gen.get("literals", []):
        key, sep, value = entry.partition("=")
        if not sep:
            raise RenderError(f"{d}: literal {entry!r} is not KEY=VALUE")
        data[key] = value
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gen["name"]},
           "data": data}
    return Res(obj, generated=True)


def content_hash(obj):
    """kustomize's ConfigMap name suffix: SHA-256 of its kind and data as compact, key-sorted JSON
    (with an empty name, as kustomize v5 hashes it), first 10 hex digits, with the letters that
    could spell words swapped out."""
    doc = {"kind": obj["kind"], "name": "", "data": obj.get("data", {})}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


# Strategic merge: the lists the Kubernetes API merges by a key (everything else is replaced).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "volumes": "name", "env": "name", "imagePullSecrets": "name",
              "volumeMounts": "mountPath", "volumeDevices": "devicePath", "hostAliases": "ip",
              "topologySpreadConstraints": "topologyKey"}


def merge_key(path, kind):
    field = path[-1]
    if field == "ports":
        in_container = len(path) > 1 and path[-2] in ("containers", "initContainers")
        return "containerPort" if in_container else ("port" if kind == "Service" else None)
    return MERGE_KEYS.get(field)


def merge(orig, patch, path, kind):
    if isinstance(patch, dict):
        out = copy.deepcopy(orig) if isinstance(orig, dict) else {}
        for key, value in patch.items():
            if key.startswith("$"):
                raise RenderError(f"patch directive {key} not supported")
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(out.get(key), value, path + [key], kind)
        return out
    if isinstance(patch, list):
        key = merge_key(path, kind)
        if key and all(isinstance(i, dict) for i in patch):
            return merge_list(orig if isinstance(orig, list) else [], patch, key, path, kind)
    return copy.deepcopy(patch)


def merge_list(orig, patch, key, path, kind):
    """Items in the patch merge into the original item with the same key (or are added), in the
    patch's order; the original's other items are interleaved in their own order, as the API
    server's strategic merge orders them (mergeSortedSlice in apimachinery)."""
    patched = []
    for item in patch:
        if key not in item:
            raise RenderError(f"{'.'.join(path)}: a patch item has no {key}")
        base = next((o for o in orig if o.get(key) == item[key]), {})
        patched.append(merge(base, item, path, kind))
    keys = {item[key] for item in patch}
    rest = [o for o in orig if o.get(key) not in keys]
    position = {o.get(key): i for i, o in enumerate(orig)}
    out, i, j = [], 0, 0
    while i < len(rest) or j < len(patched):
        if j >= len(patched):
            out.append(rest[i])
            i += 1
        elif i >= len(rest):
            out.append(patched[j])
            j += 1
        else:
            left, right = position.get(rest[i].get(key)), position.get(patched[j].get(key))
            if left is not None and right is not None and left < right:
                out.append(rest[i])
                i += 1
            else:
                out.append(patched[j])
                j += 1
    return out


def apply_patch(d, entry, res):
    unknown = set(entry) - {"path", "patch"}
    if unknown:
        raise RenderError(f"{d}: patches: {', '.join(sorted(unknown))} not supported "
                          "(strategic-merge patches by path or inline only)")
    if "path" in entry:
        where = os.path.join(d, entry["path"])
        docs = load_docs(where)
    else:
        where = f"{d} (inline patch)"
        docs = [p for p in yaml.safe_load_all(entry["patch"]) if p is not None]
    for patch in docs:
        meta = patch.get("metadata", {})
        hits = [r for r in res
                if r.kind() == patch.get("kind")
                and meta.get("name") in (r.name(), r.original_name)
                and meta.get("namespace") in (None, r.namespace())]
        if len(hits) != 1:
            raise RenderError(f"{where}: {patch.get('kind')} {meta.get('name')} matches "
                              f"{len(hits)} objects, not one")
        target = hits[0]
        if patch.get("apiVersion") != target.obj.get("apiVersion"):
            raise RenderError(f"{where}: apiVersion {patch.get('apiVersion')} is not the "
                              f"target's {target.obj.get('apiVersion')}")
        target.obj = merge(target.obj, patch, [], target.kind())


def set_namespace(namespace, res):
    for r in res:
        if r.kind() == "Namespace":
            r.obj["metadata"]["name"] = namespace
        elif r.kind() not in CLUSTER_SCOPED:
            r.obj["metadata"]["namespace"] = namespace


def add_labels(spec, res):
    unknown = set(spec) - {"pairs", "includeSelectors", "includeTemplates"}
    if unknown or spec.get("includeSelectors"):
        raise RenderError("labels: only pairs, includeTemplates and includeSelectors: false are "
                          "supported")
    pairs = {k: str(v) for k, v in spec.get("pairs", {}).items()}
    for r in res:
        r.obj["metadata"].setdefault("labels", {}).update(pairs)
        if spec.get("includeTemplates") and r.kind() in TEMPLATED:
            meta = r.obj.setdefault("spec", {}).setdefault("template", {}) \
                .setdefault("metadata", {})
            meta.setdefault("labels", {}).update(pairs)


def split_image(image):
    """`name[:tag][@digest]` -> (name, ':tag' or '@digest' or '')."""
    if "@" in image:
        name, _, digest = image.partition("@")
        return name, "@" + digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon:]
    return image, ""


def set_image(spec, res):
    unknown = set(spec) - {"name", "newName", "newTag", "digest"}
    if unknown:
        raise RenderError(f"images: {', '.join(sorted(unknown))} not supported")

    def visit(node):
        if isinstance(node, dict):
            for field in ("containers", "initContainers"):
                for c in node.get(field) or []:
                    if isinstance(c, dict) and "image" in c:
                        name, suffix = split_image(c["image"])
                        if name == spec["name"]:
                            if "digest" in spec:
                                suffix = "@" + spec["digest"]
                            elif "newTag" in spec:
                                suffix = ":" + str(spec["newTag"])
                            c["image"] = spec.get("newName", name) + suffix
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for r in res:
        visit(r.obj)


def hash_names(res):
    """Appends the content hash to each generated ConfigMap's name and rewrites the references to
    it (configMap volumes and projections, configMapRef, configMapKeyRef) in its namespace."""
    renamed = {}
    for r in res:
        if r.generated and r.kind() == "ConfigMap":
            new = f"{r.original_name}-{content_hash(r.obj)}"
            renamed[(r.namespace(), r.original_name)] = new
            r.obj["metadata"]["name"] = new

    def visit(node, namespace):
        if isinstance(node, dict):
            for field in ("configMap", "configMapRef", "configMapKeyRef"):
                ref = node.get(field)
                if isinstance(ref, dict) and (namespace, ref.get("name")) in renamed:
                    ref["name"] = renamed[(namespace, ref["name"])]
            for value in node.values():
                visit(value, namespace)
        elif isinstance(node, list):
            for value in node:
                visit(value, namespace)

    for r in res:
        if not (r.generated and r.kind() == "ConfigMap"):
            visit(r.obj.get("spec"), r.namespace())


class Dumper(yaml.SafeDumper):
    """Writes strings as kubectl does: multi-line ones (a generated file) as literal blocks, and
    ones that would read as another type ("8000", "true") in double quotes."""


def _str(dumper, value):
    tag = "tag:yaml.org,2002:str"
    if "\n" in value:
        style = "|"
    elif dumper.resolve(yaml.ScalarNode, value, (True, False)) != tag:
        style = '"'
    else:
        style = None
    return dumper.represent_scalar(tag, value, style=style)


Dumper.add_representer(str, _str)


def order(r):
    kind = r.kind()
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind)
    elif kind in ORDER_LAST:
        rank = len(ORDER_FIRST) + 1 + ORDER_LAST.index(kind)
    else:
        rank = len(ORDER_FIRST)
    group_version = r.obj.get("apiVersion", "")
    group, _, version = group_version.rpartition("/")
    return (rank, f"{group}_{version}_{kind}", r.namespace() or "", r.name())


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: kustomize-render.py DIR", file=sys.stderr)
        return 2
    try:
        res = build(argv[1])
        hash_names(res)
    except (RenderError, OSError, yaml.YAMLError) as e:
        print(f"kustomize-render: {e}", file=sys.stderr)
        return 1
    res.sort(key=order)
    docs = [yaml.dump(r.obj, Dumper=Dumper, sort_keys=True, default_flow_style=False, width=100)
            for r in res]
    sys.stdout.write("---\n".join(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
