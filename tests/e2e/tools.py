"""The Go programs the e2e tests run besides the cluster, built once into the binaries' cache
before the tests start (`make e2e` runs `python -m tests.e2e.tools`), so that a first build of
minutes is a step of its own, not part of a test under its timeout: promtool, for the alerts'
tests, the OLM bundle validator, kstatus-check (how GitOps tools read a CR's status) and helm
(the chart's tests).
A test that finds one missing still builds it first."""

from __future__ import annotations

import sys
from pathlib import Path

from ansible_operator.devcluster import binaries, bundle_validator, gobuild

HERE = Path(__file__).parent
PROMETHEUS_VERSION = "v0.316.0"  # github.com/prometheus/prometheus, as promtool/go.mod pins it
PROMTOOL = gobuild.GoProgram(
    name="promtool",
    pin=f"prometheus-{PROMETHEUS_VERSION}",
    title=f"promtool (github.com/prometheus/prometheus {PROMETHEUS_VERSION})",
    module=HERE / "promtool",
    package="github.com/prometheus/prometheus/cmd/promtool",
    tags=("remove_all_sd",),  # no service discovery plugins: nothing here needs them
)
KSTATUS = gobuild.GoProgram(
    name="kstatus-check",
    pin="cli-utils-v0.37.2",
    title="kstatus-check (sigs.k8s.io/cli-utils v0.37.2's kstatus, gopher-lua v1.1.2)",
    module=HERE / "kstatus",
)
HELM_VERSION = (
    "v4.3.1"  # helm.sh/helm/v4, as helm/go.mod pins it (Helm 3's support ended 2026-11-11)
)
HELM = gobuild.GoProgram(
    name="helm",
    pin=f"helm-{HELM_VERSION}",
    title=f"helm (helm.sh/helm/v4 {HELM_VERSION})",
    module=HERE / "helm",
    package="helm.sh/helm/v4/cmd/helm",
)
PROGRAMS = [PROMTOOL, bundle_validator.PROGRAM, KSTATUS, HELM]


def main() -> int:
    try:
        for program in PROGRAMS:
            gobuild.ensure(program, progress=lambda message: print(message, file=sys.stderr))
    except binaries.BinariesError as err:
        print(f"tests.e2e.tools: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
