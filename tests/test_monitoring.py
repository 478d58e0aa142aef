"""compose's `monitoring` profile: Prometheus and Grafana, pinned, provisioned from deploy/,
on loopback only, scraping web:8000/metrics with the admin token from a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring_files import ROOT, dashboard, expressions, family_of, selected_metrics


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def host_path(volume: str) -> Path:
    return ROOT / volume.split(":", 1)[0]


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path of the service's bind mounts from the repository."""
    return {
        volume.split(":")[1]: volume.split(":")[0]
        for volume in service["volumes"]
        if volume.startswith("./")
    }


def test_the_profile_runs_pinned_prometheus_and_grafana_on_loopback(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    monitoring = sorted(n for n, s in services.items() if "monitoring" in s.get("profiles", []))
    assert monitoring == ["grafana", "prometheus"]
    for name in monitoring:
        image = services[name]["image"]
        repository, _, tag = image.partition(":")
        assert repository == {"prometheus": "prom/prometheus", "grafana": "grafana/grafana"}[name]
        # a release, not latest or a bare major
        assert tag.lstrip("v").count(".") == 2, image
        assert services[name]["profiles"] == ["monitoring"]
        assert services[name]["ports"], name
        assert all(str(port).startswith("127.0.0.1:") for port in services[name]["ports"])
    # the product itself runs without the profile
    for name in ("redis", "web", "worker"):
        assert "profiles" not in services[name]


def test_prometheus_scrapes_web_with_the_admin_token_from_a_file(compose: dict[str, Any]) -> None:
    prometheus = compose["services"]["prometheus"]
    config_file = mounts(prometheus)["/etc/prometheus/prometheus.yml"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]
    config = yaml.safe_load(host_path(config_file).read_text())
    [job] = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert [t for c in job["static_configs"] for t in c["targets"]] == ["web:8000"]
    # /metrics wants the admin token: from the compose secret, never written in the file
    assert job["authorization"] == {
        "type": "Bearer",
        "credentials_file": "/run/secrets/admin-token",
    }
    assert prometheus["secrets"] == ["admin-token"]
    assert "admin-token" in compose["secrets"]


def test_grafana_is_provisioned_from_the_repository(compose: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    bound = mounts(grafana)
    assert all(v.endswith(":ro") for v in grafana["volumes"] if v.startswith("./"))
    provisioning = host_path(bound["/etc/grafana/provisioning"])
    [datasource] = yaml.safe_load((provisioning / "datasources/prometheus.yaml").read_text())[
        "datasources"
    ]
    assert datasource["type"] == "prometheus"
    assert datasource["url"] == "http://prometheus:9090"
    [provider] = yaml.safe_load((provisioning / "dashboards/hookspawn.yaml").read_text())[
        "providers"
    ]
    # the provider reads the directory the dashboards are mounted on, which holds the dashboard
    dashboards = host_path(bound[provider["options"]["path"]])
    assert (dashboards / "hookspawn.json").resolve() == (
        ROOT / "deploy/grafana/dashboards/hookspawn.json"
    )
    board = dashboard()
    uids = {t["datasource"]["uid"] for p in board["panels"] for t in p["targets"]}
    assert uids == {datasource["uid"]}


def test_grafana_has_no_anonymous_access_and_its_password_is_a_secret(
    compose: dict[str, Any],
) -> None:
    grafana = compose["services"]["grafana"]
    env = grafana["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_SECURITY_ADMIN_PASSWORD__FILE"] == "/run/secrets/grafana-admin-password"
    assert "GF_SECURITY_ADMIN_PASSWORD" not in env
    assert grafana["secrets"] == ["grafana-admin-password"]
    assert compose["secrets"]["grafana-admin-password"] == {
        "environment": "HOOKSPAWN_GRAFANA_ADMIN_PASSWORD"
    }
    # no password, no Grafana: never the image's default admin/admin
    assert "test -s /run/secrets/grafana-admin-password" in grafana["entrypoint"][-1]


def test_latency_panels_take_quantiles_of_bucket_series() -> None:
    quantiles = [e for e in expressions(dashboard()) if "histogram_quantile" in e]
    assert {"0.5", "0.99"} <= {e.split("(", 1)[1].split(",", 1)[0] for e in quantiles}
    assert any("hookspawn_webhook_to_session_seconds_bucket" in e for e in quantiles)
    for expr in quantiles:
        assert "by (le)" in expr, expr
        assert all(name.endswith("_bucket") for name in selected_metrics(expr)), expr


def test_selected_metrics_parses_promql() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, queue) (rate(a_bucket{code="x"}[5m]))) '
        "/ on (le) b_total offset 1h + 1e3 * sum without (class) (c[$__rate_interval])"
    )
    assert selected_metrics(expr) == {"a_bucket", "b_total", "c"}
    types = {"a": "histogram", "b": "counter", "c": "gauge"}
    assert [family_of(n, types) for n in ("a_bucket", "b_total", "c", "b_count")] == [
        "a",
        "b",
        "c",
        None,
    ]


def test_readme_says_how_to_start_it() -> None:
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert "docker compose --profile monitoring up" in documented
    assert "`HOOKSPAWN_GRAFANA_ADMIN_PASSWORD`" in documented
