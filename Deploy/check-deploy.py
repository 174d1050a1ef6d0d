#!/usr/bin/env python3
"""Checks the deployment files without a cluster: the Kubernetes manifests as `kubectl kustomize`
would assemble them (every resource listed and well-formed, probes on the operators' endpoint, each
of the coordinator's ZeroMQ endpoints a containerPort and a Service port, the KEDA objects complete
and pointing at the worker Deployment), the Dockerfile's EXPOSE, the Grafana dashboard, and the
compose file's health check. With --built FILE it also checks the output of `kubectl kustomize
Deploy/kubernetes` (namespace and image applied); with --endpoints A,B,… it takes the coordinator's
endpoint variables from there (the test suite passes those `splice coordinator --help` lists)
instead of COORDINATOR_ENDPOINTS. Exit status 0 when everything holds; each problem is one line on
standard error. Needs PyYAML (Debian: python3-yaml). The test suite runs it.
"""
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []
# The environment variables of the ZeroMQ endpoints `splice coordinator` binds (its --help lists
# them, SPLICE_METRICS_ENDPOINT aside): workers, clients and transfer-mode workers reach it there.
COORDINATOR_ENDPOINTS = ["SPLICE_WORKERS_ENDPOINT", "SPLICE_API_ENDPOINT", "SPLICE_DATA_ENDPOINT"]
# The operators' endpoints of a coordinator and a worker (check_probes).
METRICS_PORTS = {"splice-coordinator": 9450, "splice-worker": 9451}


def check(condition, message):
    if not condition:
        problems.append(message)
    return condition


def load_documents(path):
    with open(path) as file:
        return [document for document in yaml.safe_load_all(file) if document is not None]


def kustomize_resources():
    """The documents of every resource the kustomization lists, in order."""
    kustomization = yaml.safe_load(open(os.path.join(HERE, "kubernetes", "kustomization.yaml")))
    check(kustomization.get("kind") == "Kustomization", "kustomization.yaml: kind is not Kustomization")
    documents = []
    for resource in kustomization.get("resources", []):
        path = os.path.join(HERE, "kubernetes", resource)
        if check(os.path.isfile(path), f"kustomization.yaml lists {resource}, which does not exist"):
            documents += load_documents(path)
    return kustomization, documents


def by_kind(documents, kind, name):
    found = [d for d in documents if d.get("kind") == kind and d.get("metadata", {}).get("name") == name]
    check(len(found) == 1, f"expected one {kind} {name}, found {len(found)}")
    return found[0] if found else {}


def container(deployment, name):
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    found = [c for c in containers if c.get("name") == name]
    check(len(found) == 1, f"{deployment.get('metadata', {}).get('name')}: no container {name}")
    return found[0] if found else {}


def check_probes(deployment, name, port, startup):
    """The container serves the operators' endpoint on `port` and is probed there."""
    label = f"{deployment.get('metadata', {}).get('name')}/{name}"
    spec = container(deployment, name)
    environment = {e.get("name"): e.get("value") for e in spec.get("env", [])}
    check(environment.get("SPLICE_METRICS_ENDPOINT") == f"0.0.0.0:{port}",
          f"{label}: SPLICE_METRICS_ENDPOINT must be 0.0.0.0:{port} (the kubelet probes the pod's address)")
    ports = {p.get("name"): p.get("containerPort") for p in spec.get("ports", [])}
    check(ports.get("metrics") == port, f"{label}: no containerPort named metrics = {port}")
    expected = {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    if startup:
        expected["startupProbe"] = "/healthz"
    for probe, path in expected.items():
        http = spec.get(probe, {}).get("httpGet", {})
        if check(http, f"{label}: no {probe} with httpGet"):
            check(http.get("path") == path, f"{label}: {probe} asks {http.get('path')}, not {path}")
            check(http.get("port") in ("metrics", port), f"{label}: {probe} is not on the metrics port")
    annotations = deployment.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations", {})
    check(annotations.get("prometheus.io/scrape") == "true" and annotations.get("prometheus.io/port") == str(port),
          f"{label}: the pod is not annotated for Prometheus on port {port}")


def check_coordinator_ports(coordinator, service, endpoints):
    """Each ZeroMQ endpoint the coordinator binds is set explicitly to every address, declared as a
    named containerPort and published by its Service (a port left out cannot be reached in the
    cluster). Returns the ports."""
    spec = container(coordinator, "coordinator")
    environment = {e.get("name"): e.get("value") for e in spec.get("env", [])}
    names = {p.get("containerPort"): p.get("name") for p in spec.get("ports", [])}
    published = service.get("spec", {}).get("ports", [])
    ports = []
    for variable in endpoints:
        value = environment.get(variable)
        match = re.fullmatch(r"tcp://\*:(\d+)", value or "")
        if not check(match, f"splice-coordinator: {variable} must be set to tcp://*:PORT, not {value}"):
            continue
        port = int(match.group(1))
        ports.append(port)
        name = names.get(port)
        if check(name, f"splice-coordinator: {variable}'s port {port} is not a named containerPort"):
            check(any(p.get("port") == port and p.get("targetPort") in (name, port) for p in published),
                  f"Service splice-coordinator: no port {port} targeting containerPort {name} ({variable})")
    return ports


def check_dockerfile(ports):
    """The image EXPOSEs every port its containers listen on."""
    text = open(os.path.join(HERE, "docker", "Dockerfile")).read()
    exposed = {int(word) for line in text.splitlines() if line.startswith("EXPOSE ") for word in line.split()[1:]}
    for port in sorted(ports):
        check(port in exposed, f"Dockerfile: EXPOSE lacks {port}")


# The Debian package that carries each development package's shared library in bookworm: what the
# runtime image must install for a binary built against the development package.
RUNTIME_PACKAGES = {
    "libavformat-dev": "libavformat59", "libavcodec-dev": "libavcodec59", "libavutil-dev": "libavutil57",
    "libswscale-dev": "libswscale6", "libswresample-dev": "libswresample4", "libzmq3-dev": "libzmq5",
    "libpq-dev": "libpq5", "libcurl4-openssl-dev": "libcurl4", "libavfilter-dev": "libavfilter8",
    "libssl-dev": "libssl3",
}


def dockerfile_stages(text):
    """The Dockerfile's stages, each as the words of its RUN lines (continuations joined)."""
    stages, words = [], None
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("FROM "):
            words = []
            stages.append(words)
        elif line.startswith("RUN ") and words is not None:
            words.extend(line.split())
    return stages


def check_dockerfile_libraries():
    """The image builds against every system library Package.swift declares and runs with each
    one's shared library: the build stage installs every `.apt([...])` provider, the runtime stage
    the package that carries its library."""
    manifest = open(os.path.join(HERE, "..", "Package.swift")).read()
    providers = sorted({name for group in re.findall(r"\.apt\(\[([^\]]*)\]\)", manifest)
                        for name in re.findall(r'"([^"]+)"', group)})
    check(providers, "Package.swift: no .apt([...]) providers found")
    stages = dockerfile_stages(open(os.path.join(HERE, "docker", "Dockerfile")).read())
    if not check(len(stages) >= 2, "Dockerfile: expected a build stage and a runtime stage"):
        return
    build, runtime = stages[0], stages[-1]
    for package in providers:
        check(package in build, f"Dockerfile: the build stage does not install {package} (Package.swift needs it)")
        library = RUNTIME_PACKAGES.get(package)
        if check(library, f"check-deploy.py: no runtime package known for {package}; add it to RUNTIME_PACKAGES"):
            check(library in runtime, f"Dockerfile: the runtime stage does not install {library} (for {package})")


def quantity(text, unit):
    """A Kubernetes quantity ("4", "500m", "4Gi", "1536Mi") in cores (unit "cpu") or bytes."""
    text = str(text)
    suffixes = {"m": 0.001, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix, factor in suffixes.items():
        if text.endswith(suffix) and (unit == "cpu") == (suffix == "m"):
            return float(text[: -len(suffix)]) * factor
    return float(text)


# What one slot needs: 2 cores (x264/x265 threads; the worker gives each slot the pod's usable cores
# divided by its slots) and 1.5 GiB — a 1080p encode at preset medium peaked at 0.53 GiB (x264) and
# 0.48 GiB (x265) resident in `splice export` with 2 threads; the rest is room for larger sources and
# lookaheads — plus 1 GiB for the daemon itself and the transfers in flight.
CORES_PER_SLOT = 2
MEMORY_PER_SLOT = 1.5 * 2**30
MEMORY_BASE = 2**30


def check_worker_resources(worker):
    """Requests equal limits (the cores the worker counts are the cores it gets) and both follow SPLICE_SLOTS."""
    spec = container(worker, "worker")
    slots = int({e.get("name"): e.get("value") for e in spec.get("env", [])}.get("SPLICE_SLOTS", "0"))
    resources = spec.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    for resource in ("cpu", "memory"):
        check(resource in limits and requests.get(resource) == limits.get(resource),
              f"splice-worker: {resource} request and limit must be given and equal (Guaranteed QoS)")
    if check(slots >= 1, "splice-worker: no SPLICE_SLOTS"):
        cpu = quantity(limits.get("cpu", 0), "cpu")
        check(cpu == slots * CORES_PER_SLOT,
              f"splice-worker: {cpu:g} cores for {slots} slots; give {CORES_PER_SLOT} per slot ({slots * CORES_PER_SLOT})")
        memory = quantity(limits.get("memory", 0), "bytes")
        check(memory >= slots * MEMORY_PER_SLOT + MEMORY_BASE,
              f"splice-worker: {limits.get('memory')} of memory for {slots} slots; "
              f"give at least {(slots * MEMORY_PER_SLOT + MEMORY_BASE) / 2**30:g}Gi")


def selects(selector, labels):
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def pod_labels(deployment):
    return deployment.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})


def check_disruption_budget(documents, worker):
    """Node drains evict workers one at a time, and never are blocked by the last one."""
    budget = by_kind(documents, "PodDisruptionBudget", "splice-worker")
    spec = budget.get("spec", {})
    check(selects(spec.get("selector", {}).get("matchLabels", {}), pod_labels(worker)),
          "PodDisruptionBudget splice-worker: does not select the worker pods")
    check(spec.get("maxUnavailable") == 1 and "minAvailable" not in spec,
          "PodDisruptionBudget splice-worker: maxUnavailable 1 expected (minAvailable would block draining the last worker)")


def check_worker_credentials(documents, worker):
    """No worker pod holds an admin key: its containers read a join token from a Secret, and no
    volume or env of the pod names a Secret that holds a secret key (only the coordinator does)."""
    pod = worker.get("spec", {}).get("template", {}).get("spec", {})
    env = {e.get("name"): e for e in container(worker, "worker").get("env", [])}
    token = env.get("SPLICE_JOIN_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(token.get("name") and token.get("key"), "splice-worker: SPLICE_JOIN_TOKEN must come from a Secret")
    check("SPLICE_SECRET_KEY" not in env and "SPLICE_CLIENT_SECRET_KEY" not in env,
          "splice-worker: a worker pod needs no secret key file (it makes its own key pair and joins with a token)")
    secrets = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "Secret"}
    for volume in pod.get("volumes", []):
        name = volume.get("secret", {}).get("secretName")
        if not name:
            continue
        items = [item.get("key", "") for item in volume.get("secret", {}).get("items", [])]
        keys = items or list(secrets.get(name, {}).get("stringData", {}))
        check(not any(key.endswith(".key") for key in keys),
              f"splice-worker: volume {volume.get('name')} mounts a secret key from Secret {name}; only the "
              "coordinator holds one")
    check(not pod.get("initContainers"), "splice-worker: no init container is needed (workers join with a token)")


def check_network_policies(documents, coordinator, worker):
    """Workers reach the coordinator's 7450 and 7452 only (they join with a token over 7450, and hold
    no admin key); the API only from pods labelled splice-api-client; nothing else but metrics and DNS."""
    policies = [d for d in documents if d.get("kind") == "NetworkPolicy"]
    coordinator_labels, worker_labels = pod_labels(coordinator), pod_labels(worker)
    allowed_in = {}  # port -> [peer description]
    for policy in policies:
        spec = policy.get("spec", {})
        if not selects(spec.get("podSelector", {}).get("matchLabels", {}), coordinator_labels):
            continue
        check("Ingress" in spec.get("policyTypes", []), f"NetworkPolicy {policy['metadata']['name']}: not an Ingress policy")
        for rule in spec.get("ingress", []):
            check(rule.get("from") and rule.get("ports"),
                  f"NetworkPolicy {policy['metadata']['name']}: an ingress rule open to every peer or port")
            for port in rule.get("ports", []):
                for peer in rule.get("from", []):
                    allowed_in.setdefault(port.get("port"), []).append(peer)
    check(set(allowed_in) <= {7450, 7451, 7452, 9450},
          f"NetworkPolicy: the coordinator admits ports {sorted(allowed_in)}, not only 7450-7452 and 9450")
    for port in (7450, 7452):
        peers = allowed_in.get(port, [])
        check(peers and all(selects(p.get("podSelector", {}).get("matchLabels"), worker_labels)
                            and "namespaceSelector" not in p for p in peers),
              f"NetworkPolicy: port {port} must admit the worker pods of this namespace, and only them")
    for peer in allowed_in.get(7451, []):
        labels = peer.get("podSelector", {}).get("matchLabels", {})
        check(labels.get("splice-api-client") == "true" and not selects(labels, worker_labels),
              f"NetworkPolicy: port 7451 admits {peer}, not only pods labelled splice-api-client")
    check(any(p.get("podSelector", {}).get("matchLabels", {}).get("splice-api-client") == "true"
              for p in allowed_in.get(7451, [])), "NetworkPolicy: no way for labelled clients to reach the API")
    egress = [rule for policy in policies
              if selects(policy.get("spec", {}).get("podSelector", {}).get("matchLabels", {}), worker_labels)
              and "Egress" in policy.get("spec", {}).get("policyTypes", [])
              for rule in policy["spec"].get("egress", [])]
    check(egress, "NetworkPolicy: the workers' egress is not restricted")
    for rule in egress:
        ports = {p.get("port") for p in rule.get("ports", [])}
        to_coordinator = all(selects(p.get("podSelector", {}).get("matchLabels"), coordinator_labels) for p in rule.get("to", []))
        check(rule.get("to") and ((to_coordinator and ports <= {7450, 7451, 7452}) or ports == {53}),
              f"NetworkPolicy: workers may reach {rule.get('to')} on {sorted(ports)}: only the coordinator and DNS")


def check_manifests(documents, built=False, endpoints=COORDINATOR_ENDPOINTS):
    """Returns the ports the containers listen on."""
    for document in documents:
        name = document.get("metadata", {}).get("name")
        check(document.get("apiVersion") and document.get("kind") and name,
              f"a document without apiVersion, kind or metadata.name: {str(document)[:80]}")
        if built and document.get("kind") != "Namespace":
            check(document.get("metadata", {}).get("namespace") == "splice", f"{document.get('kind')} {name}: not in namespace splice")
    coordinator = by_kind(documents, "Deployment", "splice-coordinator")
    worker = by_kind(documents, "Deployment", "splice-worker")
    check_probes(coordinator, "coordinator", METRICS_PORTS["splice-coordinator"], startup=True)
    check_probes(worker, "worker", METRICS_PORTS["splice-worker"], startup=False)
    check("replicas" not in worker.get("spec", {}), "splice-worker sets replicas, which fights the autoscaler")
    service = by_kind(documents, "Service", "splice-coordinator")
    check(service.get("spec", {}).get("publishNotReadyAddresses") is True,
          "the coordinator's Service must publish it while not ready (workers must reach it during an outage)")
    ports = check_coordinator_ports(coordinator, service, endpoints) + list(METRICS_PORTS.values())
    # SIGTERM drains a worker for up to --drain-timeout (300 s unless given), then it waits for its
    # results to be acknowledged: the grace period must cover that, or the kubelet kills a drain.
    grace = worker.get("spec", {}).get("template", {}).get("spec", {}).get("terminationGracePeriodSeconds", 30)
    args = container(worker, "worker").get("args", [])
    drain = int(args[args.index("--drain-timeout") + 1]) if "--drain-timeout" in args else 300
    check(grace >= drain + 15,
          f"splice-worker: terminationGracePeriodSeconds {grace} does not cover the {drain} s drain and the hand-back after it")
    check_worker_resources(worker)
    check_disruption_budget(documents, worker)
    check_worker_credentials(documents, worker)
    check_network_policies(documents, coordinator, worker)

    # KEDA: a ScaledObject on the worker Deployment, its PostgreSQL trigger authenticated by a
    # TriggerAuthentication whose Secret exists and holds the key it names.
    scaled = by_kind(documents, "ScaledObject", "splice-worker")
    check(scaled.get("apiVersion") == "keda.sh/v1alpha1", "ScaledObject: apiVersion is not keda.sh/v1alpha1")
    spec = scaled.get("spec", {})
    check(spec.get("scaleTargetRef", {}).get("name") == "splice-worker", "ScaledObject: does not scale splice-worker")
    check(0 <= spec.get("minReplicaCount", -1) <= spec.get("maxReplicaCount", -1), "ScaledObject: bad replica bounds")
    triggers = spec.get("triggers", [])
    check(len(triggers) == 1 and triggers[0].get("type") == "postgresql", "ScaledObject: one postgresql trigger expected")
    if triggers:
        metadata = triggers[0].get("metadata", {})
        query = metadata.get("query", "")
        check("FROM segments" in query and query.lstrip().upper().startswith("SELECT"),
              "ScaledObject: the query does not read segments")
        slots = {e.get("name"): e.get("value") for e in container(worker, "worker").get("env", [])}.get("SPLICE_SLOTS")
        check(metadata.get("targetQueryValue") == slots,
              f"ScaledObject: targetQueryValue {metadata.get('targetQueryValue')} is not the pod's SPLICE_SLOTS {slots}")
        for key in ("targetQueryValue", "activationTargetQueryValue"):
            try:
                float(metadata.get(key, "x"))
            except ValueError:
                problems.append(f"ScaledObject: {key} is not a number")
        reference = triggers[0].get("authenticationRef", {}).get("name")
        authentication = by_kind(documents, "TriggerAuthentication", reference)
        for target in authentication.get("spec", {}).get("secretTargetRef", []):
            secret = by_kind(documents, "Secret", target.get("name"))
            check(target.get("key") in secret.get("stringData", secret.get("data", {})),
                  f"Secret {target.get('name')} has no key {target.get('key')}")
            check(target.get("parameter") == "connection", "TriggerAuthentication: the parameter must be `connection`")
    return ports


def check_built(path, kustomization, endpoints):
    documents = load_documents(path)
    check_manifests(documents, built=True, endpoints=endpoints)
    image = kustomization["images"][0]
    wanted = f"{image['newName']}:{image['newTag']}"
    for deployment in (d for d in documents if d.get("kind") == "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        for each in pod.get("containers", []) + pod.get("initContainers", []):
            check(each.get("image") == wanted, f"{deployment['metadata']['name']}/{each.get('name')}: image {each.get('image')}")


def check_dashboard():
    dashboard = json.load(open(os.path.join(HERE, "grafana", "splice-dashboard.json")))
    check(dashboard.get("uid") and dashboard.get("title"), "dashboard: no uid or title")
    identifiers = [p.get("id") for p in dashboard.get("panels", [])]
    check(len(identifiers) == len(set(identifiers)), "dashboard: panel ids repeat")
    expressions = [t.get("expr", "") for p in dashboard.get("panels", []) for t in p.get("targets", [])]
    check(len(expressions) >= 10 and all(expressions), "dashboard: panels without queries")
    # One name, one meaning: splice_worker_slots is a worker's own --slots (no labels), the
    # coordinator's slots by state are splice_cluster_slots. A state matcher on the first is a query
    # written for the name the coordinator's family had before.
    for expression in expressions:
        check(not re.search(r"splice_worker_slots\s*\{[^}]*state", expression),
              "dashboard: splice_worker_slots has no state label (the coordinator's slots by state are "
              f"splice_cluster_slots): {expression}")
    for needed in ("splice_queue_segments", "splice_segments_completed_total", "splice_cluster_slots",
                   "splice_worker_slots", "splice_segment_attempts_failed_total", "splice_job_duration_seconds_bucket"):
        check(any(needed in e for e in expressions), f"dashboard: nothing shows {needed}")


def check_compose():
    compose = yaml.safe_load(open(os.path.join(HERE, "compose", "compose.yaml")))
    coordinator = compose.get("services", {}).get("coordinator", {})
    check("healthcheck" in coordinator, "compose: the coordinator has no healthcheck")
    worker = compose.get("services", {}).get("worker", {})
    check(worker.get("depends_on", {}).get("coordinator", {}).get("condition") == "service_healthy",
          "compose: workers do not wait for a healthy coordinator")


def main(arguments):
    options = dict(zip(arguments[::2], arguments[1::2]))
    unknown = set(options) - {"--built", "--endpoints"}
    if unknown or len(arguments) % 2:
        print("usage: check-deploy.py [--built FILE] [--endpoints SPLICE_WORKERS_ENDPOINT,…]", file=sys.stderr)
        return 2
    endpoints = options["--endpoints"].split(",") if "--endpoints" in options else COORDINATOR_ENDPOINTS
    kustomization, documents = kustomize_resources()
    check_dockerfile(check_manifests(documents, endpoints=endpoints))
    check_dockerfile_libraries()
    if "--built" in options:
        check_built(options["--built"], kustomization, endpoints)
    check_dashboard()
    check_compose()
    for problem in problems:
        print("check-deploy: " + problem, file=sys.stderr)
    if not problems:
        print(f"check-deploy: ok ({len(documents)} Kubernetes objects, Dockerfile, dashboard, compose)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
