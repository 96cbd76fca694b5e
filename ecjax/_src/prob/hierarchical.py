"""Several test sets (cross-validation folds, benchmark datasets): a hierarchical model fitted with NUTS.

Each system ``m`` has population-level rates ``mu_m,i`` (per true class
``i``, a point of the decision simplex) and a dispersion ``kappa_m``; the
rates of test set ``t`` scatter around them, and the counts follow:

    mu_m,i            ~ Dirichlet(alpha, ..., alpha)
    kappa_m           ~ LogNormal(log 100, 1.5)
    R_t,m,i | mu, kappa ~ Dirichlet(kappa_m mu_m,i)
    K_t,m,i | R       ~ Multinomial(n_t,i, R_t,m,i)

The set-level rates are integrated out analytically (the
Dirichlet-multinomial likelihood), which leaves NUTS ``M K (D - 1) + M``
unconstrained parameters.  Small ``kappa`` means the sets disagree (each
set's rates say little about the population); large ``kappa`` pools the
sets into one.  The prior on ``kappa`` puts 95 % of its mass between about
5 and 1900 (between-set standard deviation of a 0.9 accuracy from 0.12 down
to 0.007).  The ranking is that of the population-level yields
``sum_ij U_ij P_i mu_m,ij``.

This is the one place where the posterior has no closed form, and where
NUTS earns its place; convergence is reported through ArviZ (R-hat, ESS).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src import random_bits
from ecjax._src.confusion import confusion_counts
from ecjax._src.prob import ranking
from ecjax._src.prob.draw_models.outputs import evaluate_draws
from ecjax._src.prob.inputs import as_named_counts
from ecjax._src.prob.mcmc import NUTSDiagnostics, NUTSSettings, check_nuts_settings, fit_nuts
from ecjax._src.prob.rates import PriorDistribution, as_class_priors, check_concentration
from ecjax._src.prob.utility_priors import UtilityPrior, resolve_utilities

DISPERSION_LOC = math.log(100.0)
DISPERSION_SCALE = 1.5


def _lgamma_ratio(x, c):
    """``log Gamma(x + c) - log Gamma(x)`` for ``x > 0``, ``c >= 0``, without float32 cancellation.

    For large ``x`` (a large dispersion times a rate) the two log-gammas are
    huge and nearly equal; in float32 their difference would be noise of
    order one, enough to stall NUTS.  For ``x >= 8`` Stirling's series is
    rearranged so that nothing of size ``x log x`` is subtracted:
    ``c log(x + c) + (x - 1/2) log1p(c / x) - c + s(x + c) - s(x)`` with
    ``s(y) = 1/(12 y) - 1/(360 y^3) + 1/(1260 y^5)`` (error < 1e-9); below
    8 the direct difference is accurate.
    """
    big = x >= 8.0
    xb = jnp.where(big, x, 8.0)

    def s(y):
        inv = 1.0 / y
        inv2 = inv * inv
        return inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 / 1260.0))

    stirling = c * jnp.log(xb + c) + (xb - 0.5) * jnp.log1p(c / xb) - c + s(xb + c) - s(xb)
    xs = jnp.where(big, 1.0, x)
    direct = jax.scipy.special.gammaln(xs + c) - jax.scipy.special.gammaln(xs)
    return jnp.where(big, stirling, direct)


def dirichlet_multinomial_log_likelihood(counts: jax.Array, concentration: jax.Array) -> jax.Array:
    """``log p(counts | concentration)`` of the Dirichlet-multinomial, up to the multinomial coefficient.

    ``lgamma(A) - lgamma(n + A) + sum_j [lgamma(c_j + a_j) - lgamma(a_j)]``
    with ``A = sum_j a_j``, summed over all leading axes, computed with
    :func:`_lgamma_ratio` so that it stays accurate in float32 for large
    concentrations (homogeneous test sets).
    """
    total = concentration.sum(-1)
    n = counts.sum(-1)
    return jnp.sum(_lgamma_ratio(concentration, counts)) - jnp.sum(_lgamma_ratio(total, n))


def hierarchical_model(counts: ArrayLike, concentration: float = 1.0, dispersion: float | None = None,
                       dispersion_loc: float = DISPERSION_LOC, dispersion_scale: float = DISPERSION_SCALE) -> None:
    """NumPyro model of ``(T, M, K, D)`` counts of ``M`` systems on ``T`` test sets.

    Sites: ``population_rates`` ``(M, K, D)``, ``dispersion`` ``(M,)``
    (omitted when ``dispersion`` is given as a fixed value), and the factor
    ``counts`` holding the Dirichlet-multinomial log-likelihood of the
    observed counts.  ``concentration`` must be > 0 (a proper prior for
    NUTS); 1 is uniform on each simplex.
    """
    counts = jnp.asarray(counts)
    _, m, k, d = counts.shape
    mu = numpyro.sample("population_rates",
                        dist.Dirichlet(jnp.full((m, k, d), concentration, jnp.result_type(float))).to_event(2))
    if dispersion is None:
        kappa = numpyro.sample("dispersion", dist.LogNormal(dispersion_loc, dispersion_scale).expand([m]).to_event(1))
    else:
        kappa = jnp.broadcast_to(jnp.asarray(dispersion, jnp.result_type(float)), (m,))
    # The Dirichlet-multinomial likelihood of the observed counts (set-level rates integrated out),
    # as a factor: numpyro's DirichletMultinomial subtracts float32 log-gammas of size kappa log kappa.
    numpyro.factor("counts", dirichlet_multinomial_log_likelihood(counts, kappa[:, None, None] * mu))


def counts_from_sets(labels: Sequence[ArrayLike], decisions: Sequence[ArrayLike], *, num_classes: int,
                     num_decisions: int | None = None,
                     sample_weight: Sequence[ArrayLike | None] | None = None) -> jax.Array:
    """``(T, M, K, D)`` counts from per-set labels ``[(N_t,)]`` and decisions ``[(M, N_t)]``.

    ``sample_weight``: ``None`` or a list of one ``(N_t,)`` vector of
    frequency weights per set (finite, non-negative, not all 0): the counts
    are then the weighted counts ``sum_n w_n [y_n = i] [d_m,n = j]`` (float),
    an integer weight being that many copies of the sample, as in
    :func:`ecjax.prob.compare`.  :func:`compare_test_sets` takes them as
    they are: its Dirichlet-multinomial likelihood is written with gamma
    functions, which extend it to fractional counts (equal to the
    likelihood of repeated samples at integer weights); scaling all weights
    by ``c`` weighs the data like ``c`` times as many samples.
    """
    if len(labels) != len(decisions) or not len(labels):
        raise v.InputError("`labels` and `decisions` must be non-empty lists with one entry per test set")
    if sample_weight is not None and (isinstance(sample_weight, (str, bytes)) or not hasattr(sample_weight, "__len__")
                                      or len(sample_weight) != len(labels)):
        raise v.InputError(f"`sample_weight` must be a list of one weight vector per test set ({len(labels)})")
    d = num_classes if num_decisions is None else num_decisions
    out = []
    for t, (lab, dec) in enumerate(zip(labels, decisions)):
        lab = v.as_index_array(lab, f"labels[{t}]", upper=num_classes)
        dec = v.as_index_array(dec, f"decisions[{t}]", upper=d, min_ndim=2)
        v.check_same_length(f"labels[{t}]", lab, f"decisions[{t}]", dec)
        w = None
        if sample_weight is not None:
            try:
                w = v.as_sample_weight(sample_weight[t], lab)
            except v.InputError as e:
                raise v.InputError(f"{e} (test set {t})") from None
            v.check_some_weight(w, f" of test set {t}")
        out.append(confusion_counts(lab, dec, w, num_classes=num_classes, num_decisions=d))
    shapes = {o.shape for o in out}
    if len(shapes) != 1:
        raise v.InputError(f"every test set needs the same systems: got confusion shapes {sorted(shapes)}")
    return jnp.stack(out)


@dataclass(frozen=True)
class HierarchicalComparison(NUTSDiagnostics):
    """Population-level ranking from several test sets.

    Attributes:
      comparison: a :class:`~ecjax.prob.Comparison` of the population-level yields.
      diagnostics: ``arviz.summary`` of ``population_rates`` and ``dispersion`` (R-hat, ESS).
      samples: the NUTS draws, flattened over chains.
      max_rhat, min_ess_bulk, num_divergences, inference_data: the run's diagnostics
        (:class:`~ecjax.prob.NUTSDiagnostics`; R-hat and ESS over ``population_rates`` and ``dispersion``).
    """

    comparison: ranking.Comparison
    diagnostics: object
    samples: dict

    def posterior_variables(self) -> tuple[dict, dict]:
        """The population-level utility yields and expected costs of the comparison, by system."""
        c = self.comparison
        return ({"utility_yield": (c.yields, ["system"]), "expected_cost": (c.expected_costs, ["system"])},
                {"system": list(c.systems)})

    def to_dict(self) -> dict:
        """The comparison's record (:meth:`~ecjax.prob.Comparison.to_dict`) with the run's diagnostics."""
        return {**self.comparison.to_dict(), "max_rhat": self.max_rhat, "min_ess_bulk": self.min_ess_bulk,
                "num_divergences": self.num_divergences}

    def to_frame(self, table: str = "systems") -> Any:
        """The comparison's frame (:meth:`~ecjax.prob.Comparison.to_frame`)."""
        return self.comparison.to_frame(table)

    def __repr__(self):
        return (f"HierarchicalComparison(max_rhat={self.max_rhat:.4f}, min_ess_bulk={self.min_ess_bulk:.0f}, "
                f"divergences={self.num_divergences})\n{self.comparison.summary()}")


def _checked_test_sets(counts, utilities, costs, priors, concentration, dispersion):
    """Validated ``(counts (T, M, K, D), alpha, dispersion, utility prior, class priors, system names)``."""
    names, counts = as_named_counts(counts, system_axis=1)
    alpha = check_concentration(concentration, allow_zero=False)
    if dispersion is not None:
        dispersion = v.as_scalar(dispersion, "dispersion", low=0.0, strict=True)
    prior = resolve_utilities(utilities, costs)
    k, d = prior.shape if isinstance(prior, UtilityPrior) else tuple(prior.shape)
    v.check_shape(counts, "counts", "(T, M, K, D)", sizes={"K": k, "D": d}, why=" (the shape of the utility matrix)")
    m = counts.shape[1]
    if np.any(np.asarray(counts).sum(-1) == 0):
        raise v.InputError("every test set needs samples of every class for every system (a row of `counts` is 0)")
    return counts, alpha, dispersion, prior, as_class_priors(priors, k), v.system_names(None, names, m)


def _utility_and_prior_draws(prior, class_priors, counts, key_u, key_p, s):
    """``(u, u_hat, p, p_mean)``: ``S`` utility draws and their mean, ``S`` class-prior draws and their mean.

    Fixed utilities or priors are broadcast; with ``class_priors=None`` the
    priors are the pooled class frequencies of every test set and system.
    """
    f = jnp.result_type(float)
    k, d = counts.shape[-2:]
    if isinstance(prior, UtilityPrior):
        u = prior.sample(key_u, s)
        u_hat = prior.mean if prior.mean is not None else u.mean(0)
    else:
        u = jnp.broadcast_to(prior, (s, k, d)).astype(f)
        u_hat = prior
    pooled = np.asarray(counts).sum((0, 1, 3))
    pooled = pooled / pooled.sum()
    if class_priors is None:
        p = jnp.broadcast_to(jnp.asarray(pooled, f), (s, k))
        return u, u_hat, p, p
    if isinstance(class_priors, PriorDistribution):
        return u, u_hat, class_priors.sample(key_p, s), jnp.broadcast_to(class_priors.mean, (s, k)).astype(f)
    p = jnp.broadcast_to(class_priors, (s, k)).astype(f)
    return u, u_hat, p, p


def compare_test_sets(counts: ArrayLike | Mapping[str, ArrayLike], *,
                      utilities: UtilityPrior | Callable[..., Any] | ArrayLike | None = None,
                      costs: UtilityPrior | Callable[..., Any] | ArrayLike | None = None,
                      priors: PriorDistribution | ArrayLike | None = None, key: jax.Array | None = None,
                      nuts: NUTSSettings = NUTSSettings(), concentration: float = 1.0, dispersion: float | None = None,
                      rope: float | None = None, hdi_prob: float = 0.9) -> HierarchicalComparison:
    """Rank ``M`` systems evaluated on ``T`` test sets by their population-level yields.

    Args:
      counts: ``(T, M, K, D)`` confusion counts (see :func:`counts_from_sets`),
        or a mapping ``{name: (T, K, D) counts}`` that names the systems;
        integers or weighted (fractional) counts: the Dirichlet-multinomial
        likelihood is written with gamma functions, continuous in the counts.
      utilities / costs: a ``(K, D)`` matrix or a utility prior (as in :func:`~ecjax.prob.compare`).
      priors: ``None`` (the pooled class frequencies of all sets), a fixed
        ``(K,)`` vector or a :class:`~ecjax.prob.PriorDistribution`.
      key: ``jax.random`` key (required).
      nuts: :class:`~ecjax.prob.NUTSSettings` (chains run one after
        another; NumPyro's target acceptance rate 0.8 unless it says
        otherwise).
      concentration: Dirichlet prior on the population rates (> 0).
      dispersion: fix ``kappa`` (e.g. a huge value pools the sets into one)
        instead of learning it.
      rope, hdi_prob: as in :func:`~ecjax.prob.compare`.

    The doubt decomposition (:class:`~ecjax.prob.Doubt`) is always computed:
    it costs two evaluations of the posterior draws, nothing next to NUTS.

    Returns:
      :class:`HierarchicalComparison`.
    """
    key = v.as_key(key)
    test_counts, alpha, dispersion, prior, class_priors, names = _checked_test_sets(
        counts, utilities, costs, priors, concentration, dispersion)
    t, m, k, d = test_counts.shape
    s = check_nuts_settings(nuts).num_draws
    hdi_prob = ranking.check_hdi_prob(hdi_prob, s)
    rope = ranking.check_rope(rope)

    key_mcmc, key_u, key_p, key_rank, key_d = random_bits.split_keys(key, 5)
    fit = fit_nuts(key_mcmc, hierarchical_model, (test_counts, alpha, dispersion), nuts,
                   var_names=["population_rates"] + (["dispersion"] if dispersion is None else []))
    samples = fit.samples

    f = jnp.result_type(float)
    mu = jnp.asarray(samples["population_rates"], f)  # (S, M, K, D)
    u, u_hat, p, p_mean = _utility_and_prior_draws(prior, class_priors, test_counts, key_u, key_p, s)
    yields, ec, nec = evaluate_draws(u, mu, p)
    summary = ranking.summarize(key_rank, yields, rope=rope)
    expected_yield = np.asarray(yields.mean(0))
    rec = int(np.argmax(expected_yield))
    k1, k2 = random_bits.split_keys(key_d)
    mu_point = jnp.broadcast_to(mu.mean(0), mu.shape)
    y_costs, _, _ = evaluate_draws(u, mu_point, p)
    y_rates, _, _ = evaluate_draws(jnp.broadcast_to(u_hat, u.shape).astype(f), mu, p_mean)
    doubt = ranking.Doubt(np.asarray(summary["p_best"]), np.asarray(ranking.summarize(k1, y_costs)["p_best"]),
                          np.asarray(ranking.summarize(k2, y_rates)["p_best"]), rec)
    comparison = ranking.Comparison(
        systems=names, yields=yields, expected_costs=ec, normalized_expected_costs=nec,
        expected_utility_matrix=jnp.asarray(u_hat), expected_yield=expected_yield,
        **ranking.ranking_fields(summary, rope), recommendation=rec, recommendation_probability=float(summary["p_best"][rec]), hdi_prob=hdi_prob,
        hdi=np.asarray(ranking.hdi(yields, hdi_prob)), doubt=doubt,
        info={"model": "hierarchical (population-level rates, NUTS)", "num_sets": t, "num_draws": s,
              "concentration": alpha, "dispersion": "learned" if dispersion is None else dispersion},
    )
    return HierarchicalComparison(
        comparison=comparison, inference_data=fit.inference_data, diagnostics=fit.diagnostics,
        max_rhat=fit.max_rhat, min_ess_bulk=fit.min_ess_bulk, num_divergences=fit.num_divergences, samples={name: np.asarray(x) for name, x in samples.items()},
    )
