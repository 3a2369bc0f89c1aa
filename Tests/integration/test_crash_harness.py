"""The crash harness (Tests/crash/crash_harness.py) in a short form: a few rounds of a mixed workload
killed with SIGKILL at random moments, then the end-state checks. `CRASH_ROUNDS` and `CRASH_SEED`
change the form; `make crash ROUNDS=200` runs the long one with its own report; the same in cluster mode (three
replicas on PostgreSQL, a random one killed each round) through cluster_crash_harness.py, `make
crash-cluster ROUNDS=100`."""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path

CRASH = Path(__file__).resolve().parents[1] / "crash"


def load_harness(name: str = "crash_harness"):
    # The cluster harness imports the single-node one by name, from its folder.
    if str(CRASH) not in sys.path:
        sys.path.insert(0, str(CRASH))
    spec = importlib.util.spec_from_file_location(name, CRASH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_nothing_acknowledged_is_lost_or_corrupted_by_kill_9(transferd_binary):
    harness = load_harness()
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 30)))
    rounds = int(os.environ.get("CRASH_ROUNDS", "8"))
    # Bounded: the rounds stop after the budget whatever CRASH_ROUNDS says; the last start gets
    # generous time to finish what is left on a loaded machine.
    report = harness.run(rounds, seed, budget=max(30.0, rounds * 5.0), finish_timeout=120)
    assert report.rounds >= 1 and report.submitted > 0, report
    assert report.findings == [], f"seed {seed}: {report.findings}"


def test_in_cluster_mode_a_killed_replica_loses_nothing(transferd_binary):
    harness = load_harness("crash_harness")
    cluster = load_harness("cluster_crash_harness")
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 30)))
    rounds = int(os.environ.get("CRASH_CLUSTER_ROUNDS", "4"))
    report = harness.run(rounds, seed, budget=max(40.0, rounds * 8.0), finish_timeout=120,
                         harness_class=cluster.ClusterHarness)
    assert report.rounds >= 1 and report.submitted > 0, report
    assert report.findings == [], f"seed {seed}: {report.findings}"
