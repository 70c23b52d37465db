"""Invariants of the rendered Kubernetes manifests: every kustomize target, parsed and checked."""

from __future__ import annotations

import functools
import ipaddress
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from services.retrieval.config import RetrievalConfig
from services.synthesis.config import SynthesisConfig
from services.synthesis.limits import MAX_QUESTION_PARTS
from services.validator.config import ValidatorConfig

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
TARGETS: dict[str, Path] = {
    "base": DEPLOY / "base",
    **{
        path.name: path
        for path in sorted((DEPLOY / "overlays").iterdir())
        if (path / "kustomization.yaml").is_file()
    },
}
PROD_TARGETS = ("prod", "prod-openai", "prod-tracing", "prod-judge", "prod-retrieval-v2")
# Targets that use components/redis-metrics: every prod variant (prod, and those built on it).
REDIS_METRICS_TARGETS = PROD_TARGETS
REDIS_METRICS_PORT = 9121
EXPORTER_UID = 59000  # the USER of the oliver006/redis_exporter image
# Edges the judge overlay adds to the call graph: the verdict cache in Redis.
JUDGE_EDGES = {("synthesis", "redis", 6379), ("validator", "redis", 6379)}

Manifest = dict[str, Any]


@dataclass(frozen=True)
class App:
    """What the manifests must agree with about one gRPC service (from its config and server)."""

    name: str
    health_name: str
    env_prefix: str
    grpc_port: int
    metrics_port: int


APPS = (
    App("retrieval", "grounded.retrieval.v1.RetrievalService", "RETRIEVAL_", 50051, 9091),
    App("synthesis", "grounded.synthesis.v1.SynthesisService", "SYNTHESIS_", 50052, 9092),
    App("validator", "grounded.validator.v1.ValidatorService", "VALIDATOR_", 50053, 9093),
)
# Each service's settings reader (what its main() runs first).
CONFIGS: dict[str, Callable[[dict[str, str]], object]] = {
    "retrieval": RetrievalConfig.from_env,
    "synthesis": SynthesisConfig.from_env,
    "validator": ValidatorConfig.from_env,
}
APP_UID = 10001
NAME_LABEL = "app.kubernetes.io/name"


@functools.cache
def render(target: str) -> tuple[Manifest, ...]:
    """`kubectl kustomize` output of one target, parsed (rendered once per test session)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        # Not a skip: a missing renderer must not turn the manifest invariants into a green no-op.
        pytest.fail("kubectl is not installed: it renders the kustomize targets offline")
    result = subprocess.run(
        [kubectl, "kustomize", str(TARGETS[target])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl kustomize {target} failed:\n{result.stderr}")
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


@dataclass(frozen=True)
class Rendered:
    """One rendered target with lookups by kind and name."""

    target: str
    docs: tuple[Manifest, ...]

    def of_kind(self, kind: str) -> list[Manifest]:
        return [doc for doc in self.docs if doc["kind"] == kind]

    def get(self, kind: str, name: str) -> Manifest:
        found = [doc for doc in self.of_kind(kind) if doc["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.target}: expected one {kind}/{name}, found {len(found)}"
        return found[0]

    def pod_spec(self, deployment: str) -> Manifest:
        spec: Manifest = self.get("Deployment", deployment)["spec"]["template"]["spec"]
        return spec

    def container(self, deployment: str, name: str | None = None) -> Manifest:
        """The container called `name` (default: the Deployment's own name, its main one)."""
        wanted = name or deployment
        containers: list[Manifest] = self.pod_spec(deployment)["containers"]
        found = [container for container in containers if container["name"] == wanted]
        assert len(found) == 1, f"{deployment} should run one container named {wanted}"
        return found[0]

    def container_names(self, deployment: str) -> list[str]:
        return [container["name"] for container in self.pod_spec(deployment)["containers"]]

    def environment(self, deployment: str) -> dict[str, str]:
        """What the container's process sees: the settings ConfigMap, then its own ``env`` (a
        secret reference reads as a placeholder)."""
        environ = dict(self.settings())
        for variable in self.container(deployment).get("env", []):
            environ[variable["name"]] = variable.get("value", "from-a-secret")
        return environ

    def settings(self) -> dict[str, str]:
        """The ConfigMap every app container reads with envFrom (name carries a hash suffix)."""
        names = {
            source["configMapRef"]["name"]
            for app in APPS
            for source in self.container(app.name).get("envFrom", [])
            if "configMapRef" in source
        }
        assert len(names) == 1, f"apps should share one settings ConfigMap, found {names}"
        data: dict[str, str] = self.get("ConfigMap", names.pop()).get("data", {})
        return data


@pytest.fixture(params=sorted(TARGETS))
def rendered(request: pytest.FixtureRequest) -> Rendered:
    target: str = request.param
    return Rendered(target, render(target))


@pytest.fixture(params=PROD_TARGETS)
def prod(request: pytest.FixtureRequest) -> Rendered:
    target: str = request.param
    return Rendered(target, render(target))


@pytest.fixture
def openai() -> Rendered:
    return Rendered("prod-openai", render("prod-openai"))


def all_pod_specs(rendered: Rendered) -> Iterator[tuple[str, Manifest]]:
    for deployment in rendered.of_kind("Deployment"):
        yield deployment["metadata"]["name"], deployment["spec"]["template"]["spec"]


def all_containers(rendered: Rendered) -> Iterator[tuple[str, Manifest]]:
    for name, spec in all_pod_specs(rendered):
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            yield f"{name}/{container['name']}", container


def named_port(container: Manifest, name: str) -> int:
    ports = [p["containerPort"] for p in container["ports"] if p["name"] == name]
    assert len(ports) == 1, f"container {container['name']} should name one port {name!r}"
    port: int = ports[0]
    return port


_SUFFIXES = {
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def quantity(value: str | int | float) -> float:
    """A Kubernetes resource quantity ("500m", "1536Mi", "2") as a plain number."""
    text = str(value)
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


class TestQuantity:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [("500m", 0.5), ("2", 2.0), ("1536Mi", 1536 * 2**20), ("2Gi", 2 * 2**30), ("200M", 2e8)],
    )
    def test_quantity_parses_kubernetes_suffixes(self, text: str, expected: float) -> None:
        assert quantity(text) == expected


# --- A small NetworkPolicy evaluator: enough of the spec to check the call graph we wrote. ---


@dataclass(frozen=True)
class Endpoint:
    """One side of a connection: a pod (labels + its namespace's labels) or an outside address."""

    labels: dict[str, str] = field(default_factory=dict)
    namespace_labels: dict[str, str] = field(default_factory=dict)
    ip: str | None = None


def _selects(selector: Manifest | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return True
    assert "matchExpressions" not in selector, "evaluator handles matchLabels only"
    wanted: dict[str, str] = selector.get("matchLabels", {})
    return all(labels.get(key) == value for key, value in wanted.items())


def _peer_matches(peer: Manifest, other: Endpoint, policy_namespace: dict[str, str]) -> bool:
    if "ipBlock" in peer:
        if other.ip is None:
            return False
        address = ipaddress.ip_address(other.ip)
        block = peer["ipBlock"]
        excluded = any(address in ipaddress.ip_network(cidr) for cidr in block.get("except", []))
        return address in ipaddress.ip_network(block["cidr"]) and not excluded
    if other.ip is not None:
        return False
    if "namespaceSelector" in peer:
        namespace_ok = _selects(peer["namespaceSelector"], other.namespace_labels)
    else:
        namespace_ok = other.namespace_labels == policy_namespace
    return namespace_ok and _selects(peer.get("podSelector"), other.labels)


def _port_matches(rule: Manifest, port: int, protocol: str) -> bool:
    ports: list[Manifest] = rule.get("ports", [])
    if not ports:
        return True
    for spec in ports:
        assert isinstance(spec.get("port", 0), int), "evaluator handles numeric ports only"
        if spec.get("protocol", "TCP") == protocol and spec.get("port") in (None, port):
            return True
    return False


def _direction_allows(
    policies: list[Manifest],
    pod: Endpoint,
    other: Endpoint,
    port: int,
    protocol: str,
    direction: str,
) -> bool:
    """Whether `pod` may send (Egress) to / receive (Ingress) from `other` on port/protocol."""
    rules_key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    isolated = False
    for policy in policies:
        spec = policy["spec"]
        default_types = ["Ingress", *(["Egress"] if "egress" in spec else [])]
        if direction not in spec.get("policyTypes", default_types):
            continue
        if not _selects(spec["podSelector"], pod.labels):
            continue
        isolated = True
        for rule in spec.get(rules_key, []):
            peers: list[Manifest] = rule.get(peers_key, [])
            peer_ok = not peers or any(
                _peer_matches(peer, other, pod.namespace_labels) for peer in peers
            )
            if peer_ok and _port_matches(rule, port, protocol):
                return True
    return not isolated


def connection_allowed(
    policies: list[Manifest], src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP"
) -> bool:
    """Both the sender's egress and (for a pod in our namespace) the receiver's ingress allow it."""
    egress = _direction_allows(policies, src, dst, port, protocol, "Egress")
    ours = dst.ip is None and dst.namespace_labels == src.namespace_labels
    ingress = not ours or _direction_allows(policies, dst, src, port, protocol, "Ingress")
    return egress and ingress


def pod(rendered: Rendered, app: str) -> Endpoint:
    labels: dict[str, str] = rendered.get("Deployment", app)["spec"]["template"]["metadata"][
        "labels"
    ]
    namespace = rendered.get("Deployment", app)["metadata"]["namespace"]
    return Endpoint(labels, {"kubernetes.io/metadata.name": namespace})


# --- The invariants. ---


class TestRender:
    def test_targets_cover_base_dev_prod_and_prod_openai(self) -> None:
        assert {"base", "dev", "prod", "prod-openai", "prod-tracing"} <= set(TARGETS)

    def test_render_includes_every_service_and_redis(self, rendered: Rendered) -> None:
        for name in [*(app.name for app in APPS), "redis"]:
            rendered.get("Deployment", name)
            rendered.get("Service", name)
            rendered.get("ServiceAccount", name)

    def test_render_labels_every_resource_part_of_grounded_qa(self, rendered: Rendered) -> None:
        for doc in rendered.docs:
            labels = doc["metadata"].get("labels", {})
            assert labels.get("app.kubernetes.io/part-of") == "grounded-qa", doc["metadata"]
            if doc["kind"] in ("Deployment", "Service", "ServiceAccount"):
                assert labels.get(NAME_LABEL) == doc["metadata"]["name"]


class TestProbes:
    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_probes_use_native_grpc_on_the_grpc_port(self, rendered: Rendered, app: App) -> None:
        container = rendered.container(app.name)
        grpc_port = named_port(container, "grpc")
        assert grpc_port == app.grpc_port
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[kind]["grpc"]["port"] == grpc_port, kind

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_readiness_and_startup_ask_for_the_service_name(
        self, rendered: Rendered, app: App
    ) -> None:
        container = rendered.container(app.name)
        assert container["readinessProbe"]["grpc"]["service"] == app.health_name
        assert container["startupProbe"]["grpc"]["service"] == app.health_name

    def test_retrieval_startup_budget_covers_model_and_index_load(self, rendered: Rendered) -> None:
        # Warm-up is ~4 s of model load plus the index on an idle node; allow for a throttled one.
        probe = rendered.container("retrieval")["startupProbe"]
        assert probe["periodSeconds"] * probe["failureThreshold"] >= 120

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_app_pods_run_the_app_alone(self, rendered: Rendered, app: App) -> None:
        assert rendered.container_names(app.name) == [app.name]

    def test_redis_has_readiness_and_liveness_probes(self, rendered: Rendered) -> None:
        container = rendered.container("redis")
        assert {"startupProbe", "readinessProbe", "livenessProbe"} <= set(container)


class TestSecurityContext:
    def test_pods_run_as_non_root_with_runtime_default_seccomp(self, rendered: Rendered) -> None:
        for name, spec in all_pod_specs(rendered):
            context = spec["securityContext"]
            assert context["runAsNonRoot"] is True, name
            assert context["seccompProfile"]["type"] == "RuntimeDefault", name

    def test_containers_are_restricted(self, rendered: Rendered) -> None:
        for name, container in all_containers(rendered):
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert "add" not in context["capabilities"], name
            assert context["seccompProfile"]["type"] == "RuntimeDefault", name

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_app_runs_as_the_image_user(self, rendered: Rendered, app: App) -> None:
        assert rendered.pod_spec(app.name)["securityContext"]["runAsUser"] == APP_UID
        assert rendered.container(app.name)["securityContext"]["runAsUser"] == APP_UID

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_app_writes_only_to_an_emptydir_tmp(self, rendered: Rendered, app: App) -> None:
        spec = rendered.pod_spec(app.name)
        mounts = {m["mountPath"]: m["name"] for m in rendered.container(app.name)["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert set(mounts) == {"/tmp"}
        assert "emptyDir" in volumes[mounts["/tmp"]]

    def test_service_account_tokens_are_not_mounted(self, rendered: Rendered) -> None:
        for name, spec in all_pod_specs(rendered):
            account = rendered.get("ServiceAccount", spec["serviceAccountName"])
            assert account["automountServiceAccountToken"] is False, name
            assert spec["automountServiceAccountToken"] is False, name

    def test_service_links_are_off(self, rendered: Rendered) -> None:
        # Service links would inject RETRIEVAL_PORT=tcp://... and clash with our own settings.
        for name, spec in all_pod_specs(rendered):
            assert spec["enableServiceLinks"] is False, name


class TestResources:
    def test_every_container_sets_cpu_and_memory_requests_and_limits(
        self, rendered: Rendered
    ) -> None:
        for name, container in all_containers(rendered):
            resources = container["resources"]
            for resource in ("cpu", "memory"):
                request = quantity(resources["requests"][resource])
                limit = quantity(resources["limits"][resource])
                assert 0 < request <= limit, f"{name} {resource}"

    def test_retrieval_memory_request_holds_model_and_index(self, rendered: Rendered) -> None:
        # MiniLM (~820 MB RSS) plus the FAISS index and chunk text come to ~1.2 GiB.
        requests = rendered.container("retrieval")["resources"]["requests"]
        assert quantity(requests["memory"]) >= 1.2 * 2**30


class TestServices:
    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_service_exposes_grpc_and_metrics_by_name(self, rendered: Rendered, app: App) -> None:
        service = rendered.get("Service", app.name)
        container = rendered.container(app.name)
        ports = {port["name"]: port for port in service["spec"]["ports"]}
        assert set(ports) == {"grpc", "metrics"}
        for name, number in (("grpc", app.grpc_port), ("metrics", app.metrics_port)):
            assert ports[name]["port"] == number
            assert ports[name]["targetPort"] == name
            assert named_port(container, name) == number

    def test_service_selectors_match_their_pods(self, rendered: Rendered) -> None:
        for service in rendered.of_kind("Service"):
            name = service["metadata"]["name"]
            labels = rendered.get("Deployment", name)["spec"]["template"]["metadata"]["labels"]
            assert _selects({"matchLabels": service["spec"]["selector"]}, labels), name


class TestSettings:
    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_settings_ports_match_container_ports(self, rendered: Rendered, app: App) -> None:
        settings = rendered.settings()
        container = rendered.container(app.name)
        assert int(settings[f"{app.env_prefix}PORT"]) == named_port(container, "grpc")
        assert int(settings[f"{app.env_prefix}METRICS_PORT"]) == named_port(container, "metrics")

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_servers_listen_beyond_loopback(self, rendered: Rendered, app: App) -> None:
        # The server default is 127.0.0.1, which kubelet probes and Services cannot reach.
        assert rendered.settings()[f"{app.env_prefix}HOST"] in ("0.0.0.0", "::", "[::]")

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_every_setting_is_one_the_service_accepts(self, rendered: Rendered, app: App) -> None:
        """The container's environment (the ConfigMap, then its own env; a secret reference
        reads as a placeholder) goes through the service's own settings reader, which stops
        start-up on a bad value: a typo in an overlay fails here, not as a CrashLoopBackOff."""
        read = CONFIGS[app.name]
        read(rendered.environment(app.name))  # raises SettingError, naming what it rejects

    def test_synthesis_peers_are_the_in_cluster_services(self, rendered: Rendered) -> None:
        settings = rendered.settings()
        for app, key in (("retrieval", "RETRIEVAL_ADDR"), ("validator", "VALIDATOR_ADDR")):
            target = settings[f"SYNTHESIS_{key}"]
            assert target.startswith("dns:///")  # resolved by gRPC: every pod, not one VIP
            host, port = target.removeprefix("dns:///").rsplit(":", 1)
            ports = {p["name"]: p["port"] for p in rendered.get("Service", host)["spec"]["ports"]}
            assert host == app
            assert int(port) == ports["grpc"]
            # Headless: a pod's address is dialled directly, so its port must be the Service's.
            assert named_port(rendered.container(app), "grpc") == ports["grpc"]

    def test_synthesis_closes_old_connections_so_new_replicas_get_calls(
        self, rendered: Rendered
    ) -> None:
        # Behind a ClusterIP Service a client's one HTTP/2 connection stays on one pod until
        # the server closes it.
        assert rendered.get("Service", "synthesis")["spec"].get("clusterIP") != "None"
        assert float(rendered.settings()["SYNTHESIS_MAX_CONNECTION_AGE_S"]) > 0

    @pytest.mark.parametrize("app", ("retrieval", "validator"))
    def test_grpc_dependencies_are_headless_and_balanced_per_call(
        self, rendered: Rendered, app: str
    ) -> None:
        settings = rendered.settings()
        assert rendered.get("Service", app)["spec"]["clusterIP"] == "None"
        assert settings["SYNTHESIS_LB_POLICY"] == "round_robin"
        # Old connections close, so clients re-resolve and reach replicas added since.
        assert float(settings[f"{app.upper()}_MAX_CONNECTION_AGE_S"]) > 0

    def test_retrieval_cache_is_the_redis_service(self, rendered: Rendered) -> None:
        url = rendered.settings()["RETRIEVAL_REDIS_URL"]
        ports = {p["name"]: p["port"] for p in rendered.get("Service", "redis")["spec"]["ports"]}
        assert url == f"redis://redis:{ports['redis']}/0"


class TestShutdown:
    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_grace_period_outlasts_prestop_lame_duck_and_drain(
        self, rendered: Rendered, app: App
    ) -> None:
        spec = rendered.pod_spec(app.name)
        container = rendered.container(app.name)
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {})
        server = CONFIGS[app.name](rendered.environment(app.name)).server  # type: ignore[attr-defined]
        needed = pre_stop.get("seconds", 0) + server.drain_delay_s + server.grace_s
        assert spec["terminationGracePeriodSeconds"] > needed

    def test_a_connection_closed_for_its_age_lets_the_slowest_call_finish(
        self, rendered: Rendered
    ) -> None:
        """After *_MAX_CONNECTION_AGE_S a server gives calls in flight the age grace, then cuts
        them: synthesis's grace must cover its slowest answer, and retrieval's and the
        validator's the longest synthesis waits for them."""
        synthesis = SynthesisConfig.from_env(rendered.environment("synthesis"))
        longest = {
            "synthesis": synthesis.slowest_answer_s,
            "retrieval": synthesis.retrieval_timeout_s,
            "validator": synthesis.validator_timeout_s,
        }
        for app in APPS:
            server = CONFIGS[app.name](rendered.environment(app.name)).server  # type: ignore[attr-defined]
            if server.max_connection_age_s > 0:
                assert server.max_connection_age_grace_s >= longest[app.name], app.name

    def test_synthesis_drain_outlasts_its_slowest_answer(self, rendered: Rendered) -> None:
        """An answer in flight at SIGTERM may take every downstream limit in turn (retrieval,
        the judge or a statement's validator check, the LLM, validation:
        SynthesisConfig.slowest_answer_s). The drain must wait that long, or it cuts answers
        off."""
        config = SynthesisConfig.from_env(rendered.environment("synthesis"))
        assert config.server.grace_s >= config.slowest_answer_s


class TestConcurrencyLimits:
    def test_retrieval_and_the_validator_take_what_synthesis_sends_at_its_limit(
        self, rendered: Rendered
    ) -> None:
        """Synthesis, the front door, is bounded (*_MAX_CONCURRENT_RPCS; more calls are
        RESOURCE_EXHAUSTED). Each of its calls sends up to 1 + MAX_QUESTION_PARTS retrievals
        side by side and one validator call at a time: one replica of each must take what
        synthesis sends at its limit (0 = no limit), or a busy front door fails its own calls."""
        servers = {
            app.name: CONFIGS[app.name](rendered.environment(app.name)).server  # type: ignore[attr-defined]
            for app in APPS
        }
        front = servers["synthesis"].max_concurrent_rpcs
        assert front > 0
        for name, fan_out in (("retrieval", 1 + MAX_QUESTION_PARTS), ("validator", 1)):
            limit = servers[name].max_concurrent_rpcs
            assert limit == 0 or limit >= front * fan_out, (name, limit, front)


class TestImages:
    def test_images_are_pinned_by_tag_or_digest(self, rendered: Rendered) -> None:
        for name, container in all_containers(rendered):
            image: str = container["image"]
            if "@sha256:" in image:
                assert len(image.split("@sha256:", 1)[1]) == 64, name
                continue
            last = image.rsplit("/", 1)[-1]
            assert ":" in last, f"{name}: {image} has no tag"
            assert last.split(":", 1)[1] not in ("", "latest"), f"{name}: {image}"

    def test_redis_image_is_pinned_by_digest(self, rendered: Rendered) -> None:
        assert "@sha256:" in rendered.container("redis")["image"]

    def test_dev_uses_the_dev_tag(self) -> None:
        dev = Rendered("dev", render("dev"))
        for app in APPS:
            assert dev.container(app.name)["image"].endswith(f"/{app.name}:dev")


class TestDev:
    def test_dev_logs_at_debug_with_one_replica_each(self) -> None:
        dev = Rendered("dev", render("dev"))
        assert dev.settings()["LOG_LEVEL"] == "DEBUG"
        for app in APPS:
            assert dev.get("Deployment", app.name)["spec"]["replicas"] == 1


class TestProd:
    def test_prod_denies_all_traffic_by_default(self, prod: Rendered) -> None:
        deny_all = [
            policy
            for policy in prod.of_kind("NetworkPolicy")
            if policy["spec"]["podSelector"] == {}
            and set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
            and not policy["spec"].get("ingress")
            and not policy["spec"].get("egress")
        ]
        assert len(deny_all) == 1

    @pytest.mark.parametrize(
        ("src", "dst", "port", "allowed"),
        [
            ("synthesis", "retrieval", 50051, True),
            ("synthesis", "validator", 50053, True),
            ("retrieval", "redis", 6379, True),
            ("synthesis", "redis", 6379, False),
            ("validator", "retrieval", 50051, False),
            ("validator", "redis", 6379, False),
            ("retrieval", "validator", 50053, False),
            ("redis", "retrieval", 50051, False),
            ("synthesis", "retrieval", 9091, False),
        ],
    )
    def test_prod_network_policies_allow_exactly_the_call_graph(
        self, prod: Rendered, src: str, dst: str, port: int, allowed: bool
    ) -> None:
        policies = prod.of_kind("NetworkPolicy")
        expected = allowed or (prod.target == "prod-judge" and (src, dst, port) in JUDGE_EDGES)
        assert connection_allowed(policies, pod(prod, src), pod(prod, dst), port) is expected

    def test_prod_admits_clients_to_synthesis_grpc_only(self, prod: Rendered) -> None:
        policies = prod.of_kind("NetworkPolicy")
        client = Endpoint({"app": "client"}, {"kubernetes.io/metadata.name": "frontend"})
        inbound = Endpoint({"app": "client"}, pod(prod, "synthesis").namespace_labels)
        for app in APPS:
            target = pod(prod, app.name)
            # Egress of an outside client is not ours to judge: check ingress only.
            admits = _direction_allows(policies, target, client, app.grpc_port, "TCP", "Ingress")
            assert admits is (app.name == "synthesis"), app.name
        assert not connection_allowed(policies, inbound, pod(prod, "redis"), 6379)

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_prod_lets_the_monitoring_namespace_scrape_metrics(
        self, prod: Rendered, app: App
    ) -> None:
        policies = prod.of_kind("NetworkPolicy")
        target = pod(prod, app.name)
        prometheus = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "monitoring"})
        elsewhere = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "default"})
        assert _direction_allows(policies, target, prometheus, app.metrics_port, "TCP", "Ingress")
        assert not _direction_allows(
            policies, target, elsewhere, app.metrics_port, "TCP", "Ingress"
        )

    @pytest.mark.parametrize("app", [*(app.name for app in APPS), "redis"])
    def test_prod_allows_dns_egress(self, prod: Rendered, app: str) -> None:
        policies = prod.of_kind("NetworkPolicy")
        dns = Endpoint({"k8s-app": "kube-dns"}, {"kubernetes.io/metadata.name": "kube-system"})
        for protocol in ("UDP", "TCP"):
            assert connection_allowed(policies, pod(prod, app), dns, 53, protocol), protocol

    def test_prod_autoscales_every_service_on_cpu(self, prod: Rendered) -> None:
        hpas = {
            hpa["spec"]["scaleTargetRef"]["name"]: hpa
            for hpa in prod.of_kind("HorizontalPodAutoscaler")
        }
        # Every app Deployment: the three services, and prod-retrieval-v2's second retrieval.
        assert set(hpas) == {name for name, _ in all_pod_specs(prod)} - {"redis"}
        assert {app.name for app in APPS} <= set(hpas)
        for name, hpa in hpas.items():
            assert hpa["apiVersion"] == "autoscaling/v2"
            assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"
            prod.get("Deployment", name)
            assert hpa["spec"]["minReplicas"] >= 2
            assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
            metrics = [m["resource"]["name"] for m in hpa["spec"]["metrics"]]
            assert metrics == ["cpu"]

    def test_prod_leaves_replicas_of_autoscaled_deployments_to_the_hpa(
        self, prod: Rendered
    ) -> None:
        for hpa in prod.of_kind("HorizontalPodAutoscaler"):
            target = prod.get("Deployment", hpa["spec"]["scaleTargetRef"]["name"])
            assert "replicas" not in target["spec"]

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_prod_runs_two_or_more_replicas(self, prod: Rendered, app: App) -> None:
        hpas = [
            hpa
            for hpa in prod.of_kind("HorizontalPodAutoscaler")
            if hpa["spec"]["scaleTargetRef"]["name"] == app.name
        ]
        spec = prod.get("Deployment", app.name)["spec"]
        floor = hpas[0]["spec"]["minReplicas"] if hpas else spec["replicas"]
        assert floor >= 2

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_prod_spreads_replicas_over_nodes_as_a_rule(self, prod: Rendered, app: App) -> None:
        """Two replicas on one node would make that node a single point of failure."""
        constraints = prod.pod_spec(app.name)["topologySpreadConstraints"]
        by_node = [c for c in constraints if c["topologyKey"] == "kubernetes.io/hostname"]
        assert len(by_node) == 1
        (rule,) = by_node
        assert rule["whenUnsatisfiable"] == "DoNotSchedule"
        assert rule["maxSkew"] == 1
        assert rule["nodeTaintsPolicy"] == "Honor"  # a tainted node is not an empty domain
        assert rule["matchLabelKeys"] == ["pod-template-hash"]
        labels = prod.get("Deployment", app.name)["spec"]["template"]["metadata"]["labels"]
        assert _selects(rule["labelSelector"], labels)

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_prod_has_a_disruption_budget_per_service(self, prod: Rendered, app: App) -> None:
        labels = prod.get("Deployment", app.name)["spec"]["template"]["metadata"]["labels"]
        budgets = [
            pdb
            for pdb in prod.of_kind("PodDisruptionBudget")
            if _selects(pdb["spec"]["selector"], labels)
        ]
        assert len(budgets) == 1
        assert budgets[0]["apiVersion"] == "policy/v1"

    def test_prod_carries_the_alerts_and_nothing_else_does(self, rendered: Rendered) -> None:
        """The PrometheusRule of components/alerts (docs/RUNBOOK.md): in every prod variant,
        once; base and dev have no Prometheus Operator to count on."""
        rules = [r["metadata"]["name"] for r in rendered.of_kind("PrometheusRule")]
        expected = ["grounded-qa-alerts"] if rendered.target in PROD_TARGETS else []
        assert rules == expected

    def test_prod_namespace_enforces_restricted_pod_security(self, prod: Rendered) -> None:
        namespaces = prod.of_kind("Namespace")
        assert len(namespaces) == 1
        labels = namespaces[0]["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
        for doc in prod.docs:
            if doc["kind"] != "Namespace":
                assert doc["metadata"]["namespace"] == namespaces[0]["metadata"]["name"]


class TestRetrievalV2:
    """prod-retrieval-v2: a second retrieval for blue/green index rotation, apart from the first
    (a copy that kept the first's labels would join its Service, budget and spread rule)."""

    @pytest.fixture
    def bluegreen(self) -> Rendered:
        return Rendered("prod-retrieval-v2", render("prod-retrieval-v2"))

    @pytest.mark.parametrize(
        ("src", "dst", "port"),
        [
            ("synthesis", "retrieval-v2", 50051),
            ("retrieval-v2", "redis", 6379),
            ("synthesis", "retrieval", 50051),
            ("retrieval", "redis", 6379),
        ],
    )
    def test_both_retrievals_are_in_the_call_graph(
        self, bluegreen: Rendered, src: str, dst: str, port: int
    ) -> None:
        policies = bluegreen.of_kind("NetworkPolicy")
        assert connection_allowed(policies, pod(bluegreen, src), pod(bluegreen, dst), port)

    @pytest.mark.parametrize(
        ("src", "dst", "port"),
        [
            ("validator", "retrieval-v2", 50051),
            ("retrieval-v2", "validator", 50053),
            ("retrieval-v2", "retrieval", 50051),
            ("synthesis", "retrieval-v2", 9091),
            ("synthesis", "redis", 6379),
        ],
    )
    def test_retrieval_v2_opens_nothing_else(
        self, bluegreen: Rendered, src: str, dst: str, port: int
    ) -> None:
        policies = bluegreen.of_kind("NetworkPolicy")
        assert not connection_allowed(policies, pod(bluegreen, src), pod(bluegreen, dst), port)

    def test_monitoring_scrapes_retrieval_v2(self, bluegreen: Rendered) -> None:
        policies = bluegreen.of_kind("NetworkPolicy")
        target = pod(bluegreen, "retrieval-v2")
        prometheus = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "monitoring"})
        elsewhere = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "default"})
        assert _direction_allows(policies, target, prometheus, 9091, "TCP", "Ingress")
        assert not _direction_allows(policies, target, elsewhere, 9091, "TCP", "Ingress")
        dns = Endpoint({"k8s-app": "kube-dns"}, {"kubernetes.io/metadata.name": "kube-system"})
        assert connection_allowed(policies, target, dns, 53, "UDP")

    @pytest.mark.parametrize("name", ["retrieval", "retrieval-v2"])
    def test_each_retrieval_is_selected_by_its_own_objects_only(
        self, bluegreen: Rendered, name: str
    ) -> None:
        other = "retrieval-v2" if name == "retrieval" else "retrieval"
        mine = pod(bluegreen, name).labels
        theirs = pod(bluegreen, other).labels
        deployment = bluegreen.get("Deployment", name)["spec"]
        selectors = {
            "Deployment": deployment["selector"],
            "Service": {"matchLabels": bluegreen.get("Service", name)["spec"]["selector"]},
            "PodDisruptionBudget": bluegreen.get("PodDisruptionBudget", name)["spec"]["selector"],
            "spread": deployment["template"]["spec"]["topologySpreadConstraints"][0][
                "labelSelector"
            ],
        }
        for what, selector in selectors.items():
            assert _selects(selector, mine), what
            assert not _selects(selector, theirs), what
        hpa = bluegreen.get("HorizontalPodAutoscaler", name)["spec"]
        assert hpa["scaleTargetRef"]["name"] == name
        assert "replicas" not in deployment

    def test_retrieval_v2_runs_its_own_image_with_the_shared_settings(
        self, bluegreen: Rendered
    ) -> None:
        # Its own image name in the overlay: pinning the v2 index leaves the live one alone.
        overlay = yaml.safe_load((TARGETS["prod-retrieval-v2"] / "kustomization.yaml").read_text())
        assert "grounded-qa/retrieval-v2" in {image["name"] for image in overlay["images"]}
        v2 = bluegreen.container("retrieval-v2", "retrieval")
        assert v2["envFrom"] == bluegreen.container("retrieval")["envFrom"]
        assert v2["startupProbe"] == bluegreen.container("retrieval")["startupProbe"]

    def test_synthesis_can_be_switched_to_retrieval_v2(self, bluegreen: Rendered) -> None:
        settings = dict(bluegreen.settings())
        assert settings["SYNTHESIS_RETRIEVAL_ADDR"] == "dns:///retrieval:50051"
        ports = {
            p["name"]: p["port"] for p in bluegreen.get("Service", "retrieval-v2")["spec"]["ports"]
        }
        assert bluegreen.get("Service", "retrieval-v2")["spec"]["clusterIP"] == "None"
        settings["SYNTHESIS_RETRIEVAL_ADDR"] = f"dns:///retrieval-v2:{ports['grpc']}"
        SynthesisConfig.from_env(settings)


class TestOpenAI:
    def test_openai_key_comes_from_a_secret_key_ref(self, openai: Rendered) -> None:
        env = {item["name"]: item for item in openai.container("synthesis").get("env", [])}
        key = env["SYNTHESIS_OPENAI_API_KEY"]
        assert "value" not in key
        assert key["valueFrom"]["secretKeyRef"]["name"]
        assert key["valueFrom"]["secretKeyRef"]["key"]

    def test_openai_overlay_selects_the_openai_generator(self, openai: Rendered) -> None:
        settings = openai.settings()
        assert settings["SYNTHESIS_GENERATOR"] == "openai"
        assert settings["SYNTHESIS_OPENAI_BASE_URL"].startswith(("https://", "http://"))
        assert settings["SYNTHESIS_OPENAI_MODEL"]

    def test_openai_overlay_lets_only_synthesis_reach_https(self, openai: Rendered) -> None:
        policies = openai.of_kind("NetworkPolicy")
        endpoint = Endpoint(ip="203.0.113.10")
        assert connection_allowed(policies, pod(openai, "synthesis"), endpoint, 443)
        assert not connection_allowed(policies, pod(openai, "synthesis"), endpoint, 80)
        for other in ("retrieval", "validator", "redis"):
            assert not connection_allowed(policies, pod(openai, other), endpoint, 443), other

    @pytest.mark.parametrize(
        "address",
        [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.10",
            "100.127.255.1",
            "169.254.169.254",
        ],
    )
    def test_openai_overlay_keeps_https_off_internal_addresses(
        self, openai: Rendered, address: str
    ) -> None:
        # Private, CGNAT (in-cluster or VPC ranges on some clusters) and link-local (metadata).
        policies = openai.of_kind("NetworkPolicy")
        assert not connection_allowed(policies, pod(openai, "synthesis"), Endpoint(ip=address), 443)

    def test_no_target_carries_a_secret_literal(self, rendered: Rendered) -> None:
        assert rendered.of_kind("Secret") == []
        for config_map in rendered.of_kind("ConfigMap"):
            assert not [key for key in config_map.get("data", {}) if "KEY" in key.upper()]
        for name, container in all_containers(rendered):
            for item in container.get("env", []):
                if "KEY" in item["name"].upper() or "TOKEN" in item["name"].upper():
                    assert "value" not in item, f"{name}: {item['name']}"


class TestJudge:
    @pytest.fixture
    def judged(self) -> Rendered:
        return Rendered("prod-judge", render("prod-judge"))

    @pytest.mark.parametrize("app", ["validator", "synthesis"])
    def test_judge_key_comes_from_a_secret_key_ref(self, judged: Rendered, app: str) -> None:
        env = {item["name"]: item for item in judged.container(app).get("env", [])}
        key = env[f"{app.upper()}_JUDGE_API_KEY"]
        assert "value" not in key
        assert key["valueFrom"]["secretKeyRef"]["name"] == "grounded-qa-judge"
        assert key["valueFrom"]["secretKeyRef"]["optional"] is False
        signing = env[f"{app.upper()}_JUDGE_CACHE_KEY"]
        assert "value" not in signing
        assert signing["valueFrom"]["secretKeyRef"] == {
            "name": "grounded-qa-judge",
            "key": "cache-key",
            "optional": False,
        }

    def test_judge_overlay_points_both_services_at_the_endpoint(self, judged: Rendered) -> None:
        settings = judged.settings()
        for prefix in ("VALIDATOR_", "SYNTHESIS_"):
            assert settings[f"{prefix}JUDGE_BASE_URL"].startswith(("https://", "http://"))
            assert settings[f"{prefix}JUDGE_MODEL"]
        # The synthesis judge only acts where the answerability model decides.
        assert settings["SYNTHESIS_ANSWERABILITY"] not in ("off", "shadow")
        # Synthesis must wait for a verdict that includes the judge's time.
        judge_s = float(settings["VALIDATOR_JUDGE_TIMEOUT_S"])
        assert float(settings["SYNTHESIS_VALIDATOR_TIMEOUT_S"]) > judge_s

    def test_judge_is_off_everywhere_else(self, rendered: Rendered) -> None:
        settings = rendered.settings()
        judged = rendered.target == "prod-judge"
        assert ("VALIDATOR_JUDGE_BASE_URL" in settings) is judged

    def test_judge_overlay_lets_only_validator_and_synthesis_reach_it(
        self, judged: Rendered
    ) -> None:
        policies = judged.of_kind("NetworkPolicy")
        vllm = Endpoint({"app": "vllm"}, {"kubernetes.io/metadata.name": "llm"})
        public = Endpoint(ip="203.0.113.10")
        for app in ("validator", "synthesis"):
            assert _direction_allows(policies, pod(judged, app), vllm, 8000, "TCP", "Egress")
            assert not connection_allowed(policies, pod(judged, app), public, 443), app
        for other in ("retrieval", "redis"):
            assert not _direction_allows(policies, pod(judged, other), vllm, 8000, "TCP", "Egress")


class TestTracing:
    def test_tracing_is_off_everywhere_but_the_tracing_overlay(self, rendered: Rendered) -> None:
        exporter = rendered.settings().get("OTEL_TRACES_EXPORTER")
        assert exporter == ("otlp" if rendered.target == "prod-tracing" else None)

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_tracing_overlay_lets_each_service_reach_only_the_collector(self, app: App) -> None:
        traced = Rendered("prod-tracing", render("prod-tracing"))
        policies = traced.of_kind("NetworkPolicy")
        collector = Endpoint(
            {"app": "otel-collector"}, {"kubernetes.io/metadata.name": "observability"}
        )
        elsewhere = Endpoint({"app": "otel-collector"}, {"kubernetes.io/metadata.name": "default"})
        source = pod(traced, app.name)
        assert _direction_allows(policies, source, collector, 4317, "TCP", "Egress")
        assert not _direction_allows(policies, source, elsewhere, 4317, "TCP", "Egress")
        assert not _direction_allows(policies, source, collector, 443, "TCP", "Egress")

    @pytest.mark.parametrize("app", APPS, ids=lambda app: app.name)
    def test_traced_spans_name_their_pod_namespace_and_node(self, app: App) -> None:
        traced = Rendered("prod-tracing", render("prod-tracing"))
        env = traced.container(app.name)["env"]
        names = [variable["name"] for variable in env]
        (attributes,) = [v["value"] for v in env if v["name"] == "OTEL_RESOURCE_ATTRIBUTES"]
        pairs = dict(pair.split("=", 1) for pair in attributes.split(","))
        assert set(pairs) == {"k8s.pod.name", "k8s.namespace.name", "k8s.node.name"}
        fields = {
            v["name"]: v["valueFrom"]["fieldRef"]["fieldPath"] for v in env if "valueFrom" in v
        }
        expected = {
            "k8s.pod.name": "metadata.name",
            "k8s.namespace.name": "metadata.namespace",
            "k8s.node.name": "spec.nodeName",
        }
        for key, reference in pairs.items():
            # Kubernetes expands $(NAME) only for a variable defined earlier in the same list.
            assert reference.startswith("$(") and reference.endswith(")"), reference
            variable = reference[2:-1]
            assert names.index(variable) < names.index("OTEL_RESOURCE_ATTRIBUTES")
            assert fields[variable] == expected[key]

    def test_only_the_tracing_overlay_sets_resource_attributes(self, rendered: Rendered) -> None:
        for app in APPS:
            env = rendered.container(app.name).get("env", [])
            present = any(v["name"] == "OTEL_RESOURCE_ATTRIBUTES" for v in env)
            assert present == (rendered.target == "prod-tracing"), app.name


class TestRedisMetrics:
    @pytest.fixture(params=REDIS_METRICS_TARGETS)
    def scraped(self, request: pytest.FixtureRequest) -> Rendered:
        target: str = request.param
        return Rendered(target, render(target))

    def exporter(self, scraped: Rendered) -> Manifest:
        return scraped.container("redis", "redis-exporter")

    def test_exporter_only_where_the_component_is_used(self, rendered: Rendered) -> None:
        used = rendered.target in REDIS_METRICS_TARGETS
        # Redis stays first: the container kubectl logs and exec pick without -c.
        assert rendered.container_names("redis") == ["redis", *(["redis-exporter"] if used else [])]
        ports = [port["name"] for port in rendered.get("Service", "redis")["spec"]["ports"]]
        assert ports == ["redis", *(["metrics"] if used else [])]
        images = [container["image"] for _, container in all_containers(rendered)]
        assert any("redis_exporter" in image for image in images) is used

    def test_exporter_image_is_a_pinned_release(self, scraped: Rendered) -> None:
        image = self.exporter(scraped)["image"]
        name, _, tag = image.partition("@")[0].rpartition(":")
        assert name == "oliver006/redis_exporter"
        # A release tag (vX.Y.Z, the scratch image), never latest, alpine or a moving vX.Y.
        assert re.fullmatch(r"v\d+\.\d+\.\d+", tag), image

    def test_exporter_is_restricted_and_runs_as_its_image_user(self, scraped: Rendered) -> None:
        context = self.exporter(scraped)["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == context["runAsGroup"] == EXPORTER_UID
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["privileged"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"]["type"] == "RuntimeDefault"
        assert "volumeMounts" not in self.exporter(scraped)  # it writes nothing

    def test_exporter_requests_and_limits_are_small(self, scraped: Rendered) -> None:
        resources = self.exporter(scraped)["resources"]
        for resource, most in (("cpu", 0.2), ("memory", 128 * 2**20)):
            request = quantity(resources["requests"][resource])
            limit = quantity(resources["limits"][resource])
            assert 0 < request <= limit <= most, resource

    def test_exporter_liveness_asks_its_health_endpoint(self, scraped: Rendered) -> None:
        exporter = self.exporter(scraped)
        assert named_port(exporter, "metrics") == REDIS_METRICS_PORT
        probe = exporter["livenessProbe"]["httpGet"]
        assert (probe["path"], probe["port"]) == ("/health", "metrics")

    def test_exporter_cannot_take_the_cache_out_of_service(self, scraped: Rendered) -> None:
        # The pod is Ready only when every container is, and its readiness is what puts Redis
        # in the Service's endpoints: an exporter readiness probe could cut retrieval off.
        assert "readinessProbe" not in self.exporter(scraped)
        assert "startupProbe" not in self.exporter(scraped)

    def test_exporter_reads_the_redis_in_its_own_pod(self, scraped: Rendered) -> None:
        env = {item["name"]: item["value"] for item in self.exporter(scraped)["env"]}
        redis_port = named_port(scraped.container("redis"), "redis")
        assert env["REDIS_ADDR"] == f"redis://localhost:{redis_port}"
        assert env["REDIS_EXPORTER_WEB_LISTEN_ADDRESS"] == f"0.0.0.0:{REDIS_METRICS_PORT}"
        # /scrape?target= would let a scraper point the exporter at any address.
        assert env["REDIS_EXPORTER_DISABLE_SCRAPE_ENDPOINT"] == "true"

    def test_redis_service_and_pod_name_the_metrics_port(self, scraped: Rendered) -> None:
        ports = {p["name"]: p for p in scraped.get("Service", "redis")["spec"]["ports"]}
        assert ports["metrics"]["port"] == REDIS_METRICS_PORT
        assert ports["metrics"]["targetPort"] == "metrics"
        template = scraped.get("Deployment", "redis")["spec"]["template"]["metadata"]
        annotations = template["annotations"]
        assert annotations["prometheus.io/port"] == str(REDIS_METRICS_PORT)
        assert annotations["prometheus.io/path"] == "/metrics"
        assert annotations["kubectl.kubernetes.io/default-container"] == "redis"

    def test_only_the_monitoring_namespace_reaches_the_exporter(self, scraped: Rendered) -> None:
        policies = scraped.of_kind("NetworkPolicy")
        redis = pod(scraped, "redis")
        prometheus = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "monitoring"})
        elsewhere = Endpoint({"app": "prometheus"}, {"kubernetes.io/metadata.name": "default"})
        port = REDIS_METRICS_PORT
        assert _direction_allows(policies, redis, prometheus, port, "TCP", "Ingress")
        assert not _direction_allows(policies, redis, elsewhere, port, "TCP", "Ingress")
        for app in APPS:
            assert not connection_allowed(policies, pod(scraped, app.name), redis, port), app.name
        # Nothing else new: monitoring may not use the cache itself.
        assert not _direction_allows(policies, redis, prometheus, 6379, "TCP", "Ingress")


class TestComponentsAlone:
    def test_no_component_restricts_traffic_on_its_own(self) -> None:
        # A NetworkPolicy selecting a pod for egress (or ingress) makes the rest of its egress
        # (or ingress) deny-all: a component used without network-policies must not add one, or
        # it cuts the call graph (an ingress rule for a scrape port would cut retrieval off
        # from Redis). Such policies live with the deny-all ones, in the overlays.
        offenders = {}
        for component in sorted((DEPLOY / "components").iterdir()):
            if component.name == "network-policies":
                continue
            for path in component.glob("*.yaml"):
                for doc in yaml.safe_load_all(path.read_text()):
                    if isinstance(doc, dict) and doc.get("kind") == "NetworkPolicy":
                        offenders.setdefault(component.name, []).append(path.name)
        assert offenders == {}
