"""Uncertain costs and finite test sets: NumPyro models for ranking classifiers.

* :mod:`~ecjax._src.prob.distributions`: NumPyro distributions with fast exact
  samplers (the truncated normal of the cost priors).
* :mod:`~ecjax._src.prob.utility_priors`: priors over utility/cost matrices as
  NumPyro models (intervals, truncated normal, binary cost ratios, Dyrland
  et al.'s (2022) two distributions over the normalized binary space, any user model).
* :mod:`~ecjax._src.prob.expected_utility`: the expected utility matrix (Dyrland et al. (2022)
  eqs. 18-19) and the decisions it implies.
* :mod:`~ecjax._src.prob.rates`: Dirichlet-multinomial posterior of confusion
  rates (conjugate sampler, and the same model for NUTS); deployment priors.
* :mod:`~ecjax._src.prob.paired`: Dirichlet over joint outcome cells (Bayesian
  bootstrap), the cluster bootstrap over groups of samples.
* :mod:`~ecjax._src.prob.mcmc`: NUTS settings, runs and diagnostics of the
  hierarchical models.
* :mod:`~ecjax._src.prob.hierarchical`: several test sets pooled by a
  hierarchical model fitted with NUTS.
* :mod:`~ecjax._src.prob.draw_plan`: the Monte Carlo settings, the decision rule
  and the memory plan of the posterior draws.
* :mod:`~ecjax._src.prob.inputs`: :class:`Systems`, the classifiers' outputs on
  their test samples, checked once.
* :mod:`~ecjax._src.prob.label_shift`: deployment priors from unlabelled
  deployment scores (calibrated EM), with a Bayesian-bootstrap posterior.
* :mod:`~ecjax._src.prob.curve_bands`: ROC and precision-recall curves with
  pointwise and simultaneous credible bands.
* :func:`compare`: which classifier, and how sure are we.
"""

from typing import TYPE_CHECKING

from ecjax._src.prob.compare import compare, compare_counts, draw_to_precision, evaluate_draws
from ecjax._src.prob.draw_plan import MonteCarloSettings, PerDraw
from ecjax._src.draw_runner import ProgressLines  # progress=ProgressLines(): plain lines for logs and batch jobs
from ecjax._src.prob.expected_utility import (
    ExpectedUtility,
    expected_utility_bayes_decisions,
    expected_utility_decision,
    expected_utility_matrix,
)
from ecjax._src.prob.inputs import Systems
from ecjax._src.prob.mcmc import NUTSSettings
from ecjax._src.prob.paired import (
    ClusteredOutcomeTable,
    clustered_outcome_table,
    sample_clustered_confusions,
    sample_joint_confusions,
)
from ecjax._src.prob.ranking import Comparison, Doubt, hdi
from ecjax._src.prob.rates import (
    PriorDistribution,
    dirichlet_priors,
    draws_priors,
    interval_priors,
    rates_model,
    sample_class_priors,
    sample_rates,
    sample_rates_nuts,
)
from ecjax._src.prob.utility_priors import (
    UtilityPrior,
    cost_ratio,
    cost_ratio_model,
    from_model,
    interval_model,
    intervals,
    seed004_gaussian,
    seed004_gaussian_model,
    seed004_uniform,
    seed004_uniform_model,
    truncated_normal,
    truncated_normal_model,
)

# Modules that import NumPyro's inference or optax load on first use of one of their names (PEP 562), so that
# `from ecjax import prob; prob.compare(...)` (and the command line) do not import them: about 0.5 s a process.
_LAZY = {
    'BUILTIN_METRICS': 'ecjax._src.prob.bootstrap',
    'MetricPosterior': 'ecjax._src.prob.bootstrap',
    'bootstrap_metric': 'ecjax._src.prob.bootstrap',
    'weighted_metric': 'ecjax._src.prob.bootstrap',
    'CurveBand': 'ecjax._src.prob.curve_bands',
    'curve_band': 'ecjax._src.prob.curve_bands',
    'TruncatedStandardNormal': 'ecjax._src.prob.distributions',
    'CorrelatedTTest': 'ecjax._src.prob.from_results',
    'HierarchicalResultsComparison': 'ecjax._src.prob.from_results',
    'HierarchicalTTest': 'ecjax._src.prob.from_results',
    'HyperpriorBounds': 'ecjax._src.prob.from_results',
    'ResultsComparison': 'ecjax._src.prob.from_results',
    'compare_results': 'ecjax._src.prob.from_results',
    'correlated_t_test': 'ecjax._src.prob.from_results',
    'hierarchical_compare_results': 'ecjax._src.prob.from_results',
    'hierarchical_results_model': 'ecjax._src.prob.from_results',
    'hierarchical_t_model': 'ecjax._src.prob.from_results',
    'hierarchical_test': 'ecjax._src.prob.from_results',
    'SignedRankTest': 'ecjax._src.prob.signed_rank',
    'signed_rank_test': 'ecjax._src.prob.signed_rank',
    'HierarchicalComparison': 'ecjax._src.prob.hierarchical',
    'compare_test_sets': 'ecjax._src.prob.hierarchical',
    'counts_from_sets': 'ecjax._src.prob.hierarchical',
    'hierarchical_model': 'ecjax._src.prob.hierarchical',
    'LabelShiftPosterior': 'ecjax._src.prob.label_shift',
    'estimate_priors': 'ecjax._src.prob.label_shift',
    'label_shift_posterior': 'ecjax._src.prob.label_shift',
    'SampleCostComparison': 'ecjax._src.prob.sample_costs',
    'compare_sample_costs': 'ecjax._src.prob.sample_costs',
}

if TYPE_CHECKING:  # the lazy names, for type checkers
    from ecjax._src.prob.bootstrap import BUILTIN_METRICS, MetricPosterior, bootstrap_metric, weighted_metric
    from ecjax._src.prob.curve_bands import CurveBand, curve_band
    from ecjax._src.prob.distributions import TruncatedStandardNormal
    from ecjax._src.prob.from_results import (
        CorrelatedTTest,
        HierarchicalResultsComparison,
        HierarchicalTTest,
        HyperpriorBounds,
        ResultsComparison,
        compare_results,
        correlated_t_test,
        hierarchical_compare_results,
        hierarchical_results_model,
        hierarchical_t_model,
        hierarchical_test,
    )
    from ecjax._src.prob.hierarchical import (
        HierarchicalComparison,
        compare_test_sets,
        counts_from_sets,
        hierarchical_model,
    )
    from ecjax._src.prob.label_shift import LabelShiftPosterior, estimate_priors, label_shift_posterior
    from ecjax._src.prob.signed_rank import SignedRankTest, signed_rank_test
    from ecjax._src.prob.sample_costs import SampleCostComparison, compare_sample_costs


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ecjax.prob' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BUILTIN_METRICS", "MetricPosterior", "bootstrap_metric", "weighted_metric",
    "CorrelatedTTest", "SignedRankTest", "signed_rank_test", "HierarchicalTTest", "ResultsComparison", "compare_results", "correlated_t_test",
    "hierarchical_t_model", "hierarchical_test", "HierarchicalResultsComparison", "hierarchical_compare_results",
    "hierarchical_results_model", "HyperpriorBounds", "NUTSSettings", "MonteCarloSettings", "Systems",
    "ClusteredOutcomeTable", "Comparison", "Doubt", "ExpectedUtility", "HierarchicalComparison", "PerDraw",
    "PriorDistribution", "TruncatedStandardNormal", "UtilityPrior", "clustered_outcome_table", "compare", "compare_counts",
    "compare_test_sets", "counts_from_sets", "cost_ratio", "cost_ratio_model", "dirichlet_priors", "draw_to_precision", "evaluate_draws",
    "expected_utility_bayes_decisions", "expected_utility_decision", "expected_utility_matrix", "from_model", "hdi",
    "hierarchical_model", "interval_model", "interval_priors", "intervals", "rates_model", "sample_class_priors",
    "sample_clustered_confusions", "sample_joint_confusions", "sample_rates", "sample_rates_nuts",
    "seed004_gaussian", "seed004_gaussian_model", "seed004_uniform", "seed004_uniform_model", "truncated_normal",
    "truncated_normal_model", "CurveBand", "curve_band", "LabelShiftPosterior", "estimate_priors",
    "label_shift_posterior", "draws_priors",
    "SampleCostComparison", "compare_sample_costs",
    "ProgressLines",
]
