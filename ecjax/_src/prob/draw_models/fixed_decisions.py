"""Fixed decisions on the host: the Bayes decisions of scores made once, padded to a bucket of sizes, and their counts.

The models of fixed counts (:mod:`~ecjax._src.prob.draw_models.unpaired`, :mod:`~ecjax._src.prob.draw_models.joint`,
:mod:`~ecjax._src.prob.draw_models.clustered`, :mod:`~ecjax._src.prob.draw_models.merged`) start from these: given
decisions, or the Bayes decisions (Ferrer 2025, eq. 7) of the expected utility matrix.
"""

from __future__ import annotations

from functools import partial

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.costs import StructuredCosts
from ecjax._src.decisions import bayes_decisions_kernel, log_posteriors_kernel


@partial(jax.jit, static_argnames=("score_type",))
def _decide_kernel(scores, costs, log_priors, *, score_type):
    return bayes_decisions_kernel(log_posteriors_kernel(scores, log_priors, score_type), costs)


# Fixed decisions and their counts are computed on samples padded to a power of two (ecjax._src.inputs.bucket_length),
# at least this many, so that data of a similar size (9,000 or 10,000 samples) reach the same compiled programs.
_MIN_SAMPLE_BUCKET = 1024


def bucket_size(n: int) -> int:
    """The padded length of ``n`` samples: the next power of two, at least 1024 (padding made once per system)."""
    return v.bucket_length(n, _MIN_SAMPLE_BUCKET)


def _padded(x, axis=0):
    return v.pad_to_bucket(x, axis=axis, minimum=_MIN_SAMPLE_BUCKET)


def padded_bayes_decisions(scores: ArrayLike, costs: ArrayLike | StructuredCosts, log_priors: ArrayLike,
                           score_type: str) -> np.ndarray:
    """Bayes decisions (Ferrer 2025, eq. 7) of one system's validated ``(N, K)`` scores for one ``(K, D)`` cost matrix
    (or structured costs), on the host: the fixed decisions of :func:`~ecjax.prob.compare`.  ``log_priors`` ``(K,)``
    turn likelihood-type scores into posteriors (ignored otherwise).  The samples are padded to :func:`bucket_size`,
    so that data of a similar size reuse the compiled program."""
    f = jnp.result_type(float)
    n = np.shape(scores)[0]
    c = costs.map(lambda x: v.to_device(x, f)) if isinstance(costs, StructuredCosts) else v.to_device(costs, f)
    dec = _decide_kernel(v.to_device(_padded(scores)), c, v.to_device(log_priors, f), score_type=score_type)
    return np.asarray(dec)[:n]


def bayes_decisions_of(scores: list, costs: ArrayLike | StructuredCosts, priors: ArrayLike,
                       score_type: str) -> list[np.ndarray]:
    """:func:`padded_bayes_decisions` of each system's scores, deciding with the class ``priors`` (a zero prior: a
    class never decided for)."""
    with np.errstate(divide="ignore"):
        log_p = np.log(priors)
    return [padded_bayes_decisions(x, costs, log_p, score_type) for x in scores]


def fixed_counts(labels: ArrayLike, decisions: ArrayLike, k: int, d: int,
                 weights: ArrayLike | None = None) -> np.ndarray:
    """``(..., K, D)`` counts ``sum_n w_n [y_n = i] [d_n = j]`` of fixed decisions, on the host.

    Exact: int64 counts, or float64 sums of ``weights`` ``(N,)``.  One
    ``bincount`` per system costs no compiled program (the decisions are
    on the host already).
    """
    y, dec = np.broadcast_arrays(np.asarray(labels, np.int64), np.asarray(decisions, np.int64))
    flat = (y * d + dec).reshape(-1, y.shape[-1])
    counts = [np.bincount(f, weights=weights, minlength=k * d) for f in flat]
    return np.stack(counts).reshape(y.shape[:-1] + (k, d))


def mean_weights(counts: ArrayLike, alpha: float) -> np.ndarray:
    """Posterior mean weights of fixed counts: ``n_m,ij + alpha``.

    Row-normalized they are ``E[R_m,ij]`` (the Dirichlet mean, unpaired; the
    within-class proportions of the paired model's marginal ``W_m ~
    Dirichlet(n_m + alpha)``, :mod:`~ecjax._src.prob.paired` eq. 1); normalized as
    a whole, ``E[P_i R_m,ij]`` of the paired model with the test set's class
    frequencies.
    """
    return np.asarray(counts, np.float64) + alpha
