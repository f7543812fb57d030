"""Collection for the whole repository: the quick tier.

``python -m pytest -m quick`` runs every test and doctest outside the modules below, the
ones that take longest (``--durations=0`` on the full run: together about five of its
seven minutes on 2 cores); the full command in the README, which CI runs, runs them all.
"""

import pytest

NOT_QUICK = {"test_fuzz", "test_docs", "test_diagnostics", "test_limited", "test_golden",
             "test_readme", "test_selection", "test_route", "test_one_truth",
             "test_messages", "test_inference", "test_robust", "test_hardening",
             "test_sources", "test_model"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem not in NOT_QUICK and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.quick)
