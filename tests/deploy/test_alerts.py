"""The alerts (deploy/components/alerts): every expression names only metrics and labels the
services define, selects the namespace prod deploys to, and every alert has its runbook section.

An alert on a metric that does not exist never fires: a renamed family or label (a typo in the
rule) is a silent hole in paging, which these checks turn into a failed test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from prometheus_client.metrics import MetricWrapperBase

from services.common import metrics

ROOT = Path(__file__).resolve().parents[2]
RULE_FILE = ROOT / "deploy" / "components" / "alerts" / "prometheusrule.yaml"
RUNBOOK = ROOT / "docs" / "RUNBOOK.md"
RELIABILITY = ROOT / "docs" / "RELIABILITY.md"
PROD = ROOT / "deploy" / "overlays" / "prod" / "kustomization.yaml"

# Labels the scrape adds to every series (a PodMonitor: namespace, pod, container, job, ...).
TARGET_LABELS = frozenset({"namespace", "pod", "container", "job", "instance", "endpoint"})
# A PrometheusRule's fields as the Prometheus Operator's CRD defines them (monitoring.coreos.com/v1).
GROUP_FIELDS = frozenset(
    {"name", "interval", "rules", "limit", "partial_response_strategy", "query_offset", "labels"}
)
RULE_FIELDS = frozenset(
    {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
)
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
METRIC = re.compile(r"\bgrounded_[a-z0-9_]+")
# A selector of one of our families: its name, then {matchers}.
SELECTOR = re.compile(r"\b(grounded_[a-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _defined() -> dict[str, frozenset[str]]:
    """Every series name the families of services/common/metrics.py expose, with the labels
    each carries (``le`` for a histogram's buckets)."""
    suffixes = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}
    names: dict[str, frozenset[str]] = {}
    for value in vars(metrics).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        labels = frozenset(value._labelnames)
        for family in value.describe():
            for suffix in suffixes[family.type]:
                names[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return names


DEFINED = _defined()


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULE_FILE.read_text())
    return [rule for group in document["spec"]["groups"] for rule in group["rules"]]


RULES = _rules()
ALERTS = [rule["alert"] for rule in RULES]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_registry_holds_the_services_families() -> None:
    """The comparison below is only as good as this set: it must hold what metrics.py defines."""
    assert "grounded_rpc_requests_total" in DEFINED
    assert DEFINED["grounded_rpc_requests_total"] >= {"service", "method", "code", "reason"}
    assert "grounded_rpc_latency_seconds_bucket" in DEFINED
    assert "grounded_serving" in DEFINED
    assert "grounded_rpc_requests" not in DEFINED  # a counter is exposed with _total only


def test_the_rule_file_is_a_prometheus_rule_of_known_fields() -> None:
    """kubernetes-validate has no schema for the Operator's CRDs (it warns and passes), so the
    shape is checked here."""
    document = yaml.safe_load(RULE_FILE.read_text())
    assert document["apiVersion"] == "monitoring.coreos.com/v1"
    assert document["kind"] == "PrometheusRule"
    assert set(document) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(document["spec"]) == {"groups"}
    for group in document["spec"]["groups"]:
        assert set(group) <= GROUP_FIELDS and {"name", "rules"} <= set(group)
        for rule in group["rules"]:
            assert set(rule) <= RULE_FIELDS, rule.get("alert")
            assert "alert" in rule and isinstance(rule["expr"], str)
            assert DURATION.match(rule.get("for", "0s")), rule["alert"]
            assert all(isinstance(v, str) for v in rule["labels"].values())
            assert all(isinstance(v, str) for v in rule["annotations"].values())
    assert len(set(ALERTS)) == len(ALERTS)


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alert_names_only_metrics_the_services_define(rule: dict[str, Any]) -> None:
    unknown = set(METRIC.findall(rule["expr"])) - DEFINED.keys()
    assert not unknown, f"{rule['alert']} names metrics no service defines: {sorted(unknown)}"


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alert_selects_only_labels_its_metrics_carry(rule: dict[str, Any]) -> None:
    for name, matchers in SELECTOR.findall(rule["expr"]):
        used = {m.group(1) for m in MATCHER.finditer(matchers)}
        assert used <= DEFINED.get(name, frozenset()) | TARGET_LABELS, (
            f"{rule['alert']}: {name} has no label {sorted(used - DEFINED.get(name, set()))}"
        )


# Series the alerts read that no service defines, with the labels they carry: Prometheus's own
# `up` (the target's labels only) and kube-state-metrics' (its labels name the object; its
# scrape adds job and instance).
EXTERNAL = {
    "up": TARGET_LABELS,
    "kube_pod_container_status_restarts_total": frozenset(
        {"namespace", "pod", "uid", "container", "job", "instance"}
    ),
    "kube_deployment_status_replicas_available": frozenset(
        {"namespace", "deployment", "job", "instance"}
    ),
    "kube_deployment_spec_replicas": frozenset({"namespace", "deployment", "job", "instance"}),
}
# A series name followed by its selector; an aggregation's "by (labels) (" and a label that
# an annotation's template reads.
SERIES = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
BY = re.compile(r"\bby\s*\(([^)]*)\)\s*\(")
LABEL_REF = re.compile(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)")


def _labels_of(name: str) -> frozenset[str]:
    """The labels a series the rules read carries once scraped."""
    if name in DEFINED:
        return DEFINED[name] | TARGET_LABELS
    assert name in EXTERNAL, f"no labels known for {name}: add it to EXTERNAL"
    return EXTERNAL[name]


def _argument(expr: str, start: int) -> str:
    """The parenthesised text that opens at ``expr[start]`` (a "(")."""
    depth = 0
    for i in range(start, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[i], 0)
        if depth == 0:
            return expr[start + 1 : i]
    raise AssertionError(f"unbalanced parentheses after {expr[:start]!r}")


def _groupings(expr: str) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Each ``by (...)`` aggregation of ``expr``: the labels it keeps, and the labels every series
    under it carries (an aggregation can keep only those)."""
    found = []
    for match in BY.finditer(expr):
        kept = frozenset(label.strip() for label in match.group(1).split(",") if label.strip())
        names = SERIES.findall(_argument(expr, match.end() - 1))
        assert names, f"no series under {match.group(0)!r}"
        found.append((kept, frozenset.intersection(*(_labels_of(n) for n in names))))
    return found


def _alert_labels(expr: str) -> frozenset[str]:
    """The labels an alert's series can carry: with aggregations, those every one keeps (they
    are joined by and / comparison, which match on them); without, those of the series read."""
    if groupings := _groupings(expr):
        return frozenset.intersection(*(kept for kept, _ in groupings))
    return frozenset.union(*(_labels_of(n) for n in SERIES.findall(expr)))


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alert_groups_only_by_labels_its_series_carry(rule: dict[str, Any]) -> None:
    """Review of today's diff: GroundedQAModelFailures grouped grounded_model_failures_total by
    service, a label it does not have and the PodMonitor does not add (that would take a
    ServiceMonitor): the group was "" and the summary read ": model ... failed"."""
    for kept, carried in _groupings(rule["expr"]):
        assert kept <= carried, f"{rule['alert']}: grouped by {sorted(kept - carried)}, not carried"


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alerts_text_reads_only_labels_its_series_carry(rule: dict[str, Any]) -> None:
    available = _alert_labels(rule["expr"]) - {"le"}
    for field, text in rule["annotations"].items():
        read = set(LABEL_REF.findall(text))
        assert read <= available, f"{rule['alert']}.{field} reads {sorted(read - available)}"


def test_the_label_checks_see_a_missing_label() -> None:
    """The two checks above on made-up rules: they must be able to fail."""
    expr = 'sum by (namespace, service, model) (increase(grounded_model_failures_total{x=""}[1m]))'
    assert [sorted(k - c) for k, c in _groupings(expr)] == [["service"]]
    assert "service" not in _alert_labels('grounded_model_failures_total{x=""} > 0')
    assert _alert_labels('up{x=""} == 0') == TARGET_LABELS


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alert_selects_the_namespace_prod_deploys_to(rule: dict[str, Any]) -> None:
    """The expressions name the namespace (a rule is evaluated over every namespace Prometheus
    scrapes); it must be the one the component is deployed with."""
    namespace = yaml.safe_load(PROD.read_text())["namespace"]
    selected = set(re.findall(r'namespace="([^"]*)"', rule["expr"]))
    assert selected == {namespace}, rule["alert"]


@pytest.mark.parametrize("rule", RULES, ids=ALERTS)
def test_an_alert_has_a_severity_a_summary_and_its_runbook_section(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in ("page", "warning")
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    path, _, anchor = rule["annotations"]["runbook_url"].partition("#")
    assert path == "docs/RUNBOOK.md"
    headings = {
        _anchor(line.lstrip("#"))
        for line in RUNBOOK.read_text().splitlines()
        if line.startswith("#")
    }
    assert anchor in headings, f"{rule['alert']}: no section #{anchor} in docs/RUNBOOK.md"


def test_reliability_lists_every_alert() -> None:
    text = RELIABILITY.read_text()
    assert [alert for alert in ALERTS if f"`{alert}`" not in text] == []
