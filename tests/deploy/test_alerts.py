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
