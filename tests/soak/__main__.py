"""`python -m tests.soak` (`make soak`): the fault suite with N CRs for a duration, its figures
printed; exit code 1 on any violation, 2 when the soak itself could not run."""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from ansible_operator.dev.launcher import LaunchError
from ansible_operator.devcluster.cluster import ClusterError

from .suite import SoakConfig, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make soak", description=__doc__)
    parser.add_argument("--n", type=int, default=int(os.environ.get("SOAK_N") or 200))
    parser.add_argument(
        "--duration",
        type=float,
        default=float(os.environ.get("SOAK_DURATION") or 600),
        help="seconds of random faults",
    )
    parser.add_argument("--seed", type=int, default=None, help="random unless given")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="a fresh temporary one unless given"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    config = SoakConfig(workdir=workdir, n=args.n, seed=seed, duration=args.duration)
    try:
        report = run(config)
    except (ClusterError, LaunchError) as err:
        print(f"soak (seed {seed}) could not run: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
