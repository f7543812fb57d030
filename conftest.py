"""Collection for the whole repository: the quick tier.

``python -m pytest -m quick`` runs every test and doctest outside the test modules below
(folder/name under tests/), the ones that take longest (``--durations=0`` on the full
run: together about five of its seven minutes on 2 cores); the full command in the
README, which CI runs, runs them all.
"""

import pytest

NOT_QUICK = {"model/test_fuzz", "project/test_docs", "identification/test_conditions",
             "estimation/test_limited", "project/test_golden", "project/test_readme",
             "estimation/test_selection", "estimation/test_pipeline", "results/test_one_truth",
             "model/test_messages", "inference/test_bootstrap", "inference/test_robust",
             "model/test_hardening", "data/test_readers", "model/test_model",
             "project/test_doc_examples"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = f"{item.path.parent.name}/{item.path.stem}"
        if module not in NOT_QUICK and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.quick)
