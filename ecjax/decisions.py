"""Decisions: posteriors from scores, Bayes decisions and the naive decision."""

from ecjax._src.decisions import (
    bayes_decisions,
    log_likelihoods_from_posteriors,
    log_posteriors,
    naive_decision,
    naive_expected_cost,
)

__all__ = [
    "bayes_decisions",
    "log_likelihoods_from_posteriors",
    "log_posteriors",
    "naive_decision",
    "naive_expected_cost",
]
