"""Posterior of confusion-matrix rates, and deployment priors (fixed or uncertain).

Model (one per system and true class ``i``): the decisions of the ``n_i``
test samples of class ``i`` are multinomial with rates ``R_i = (R_i1, ...,
R_iD)``; with a ``Dirichlet(alpha, ..., alpha)`` prior the posterior is

    R_i | counts ~ Dirichlet(K_i1 + alpha, ..., K_iD + alpha)                           (1)

(Dirichlet-multinomial conjugacy).  ``alpha = 0`` gives the Bayesian
bootstrap (Rubin 1981) of each class.

**The default prior: ``A = 2`` pseudo-observations per confusion matrix.**
``alpha = A / (K D)`` per cell (:func:`default_concentration`), and
``alpha_P = A / K`` for the class frequencies: together these are exactly
the joint ``Dirichlet(A / (K D))`` prior over the ``K D`` cells of the
matrix (a Dirichlet's class totals and within-class proportions are
independent Dirichlets, with concentrations the row sums and the rows), and
the per-system marginal of the paired model (:mod:`~ecjax._src.prob.paired`) with
the same default, so unpaired and paired systems get the same prior.  Two
properties choose it:

* the prior's mass does not grow with ``K``.  The former default, ``alpha
  = 1 / D`` (one pseudo-observation per *row*), adds ``K`` to the matrix:
  for ``K = D = 100`` with 100 samples per class it pulls the accuracy of a
  0.7-accurate system down by ``0.7 K / N = 0.007``, 1.5 posterior standard
  deviations, and the 90 % HDI covered the true accuracy in 0.587 of
  simulated test sets.  With ``A = 2`` the shift is ``A (acc - 1 / D) / (N
  + A)`` at any ``K``;
* it does not vanish either, so a class without errors keeps a credible
  error rate (its HDI is not ``[0, 0]``).  For a binary problem the
  accuracy under the joint prior is ``Beta(n_correct + A/2, n_wrong + A/2)``
  (aggregation), and ``A = 2`` makes that the uniform Bayes-Laplace Beta
  while each row is Jeffreys' ``Beta(1/2, 1/2)`` (Brown, Cai & DasGupta,
  Stat. Sci. 2001).  Exact coverage of the accuracy's 90 % HDI, over true
  accuracies 0.5 to 0.995 (``N = 20, 50, 100, 300``): ``A = 2``: mean
  0.911 / 0.905 / 0.903 / 0.903, minimum 0.844 / 0.872 / 0.865 / 0.889;
  ``A = 1`` (a Jeffreys accuracy): mean about 0.89 but minimum 0.76 (at
  accuracy 0.985, ``N = 100``: a system without errors gets an HDI that
  stops short of the truth); ``A = 3``: mean 0.90-0.91, minimum 0.866.
  From ``K = 2`` to ``1000`` (``D = K``; with the class frequencies
  uncertain the accuracy is ``Beta(correct + A / D, wrong + A (D - 1) /
  D)`` exactly, so the coverage is an exact binomial sum), 90 % HDI
  coverage at accuracies 0.7 / 0.9 (the last column: ``alpha = 1 / D``
  with ``alpha_P = 1``, the joint-Dirichlet form of the former default):

      K (samples per class)   A = 2 (default)   a pseudo-observation per row (~former)
      2 (50)                  0.899 / 0.903     0.899 at 0.7
      10 (10)                 0.891 / 0.904     0.710
      100 (10)                0.902 / 0.896     0.001
      1000 (10)               0.900 / 0.898     0.000

  Through the samplers themselves (:func:`sample_rates` and
  :func:`sample_class_priors`, accuracy 0.7, 10 samples per class):
  0.898 over 400 simulated test sets at ``K = 10`` and 0.850 over 300 at
  ``K = 100`` (300 draws each; the same HDI rule on as many exact Beta
  draws for the same test sets: 0.847; ``tests/test_prob_rates_coverage.py``).

Class priors ``P_i`` (the weights of the expected cost, Ferrer (2022a) eq. 2):

* ``None``: the test data's class frequencies, uncertain — their posterior
  ``Dirichlet(n_i + alpha_P)`` with ``alpha_P = A / K``; together with the
  rates this is the Dirichlet posterior of the whole confusion matrix;
* a fixed ``(K,)`` vector of deployment priors (Ferrer 2022a, eq. 2's
  prior-shift);
* a :class:`PriorDistribution`: uncertain deployment priors, a Dirichlet
  (:func:`dirichlet_priors`) or uniform within per-class intervals
  (:func:`interval_priors`, e.g. "prevalence 2 to 5 %").

The same model runs two ways: exact conjugate sampling
(:func:`sample_rates`, the default, vectorized over draws) and NUTS on the
NumPyro model :func:`rates_model` (:func:`sample_rates_nuts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

if TYPE_CHECKING:
    from numpyro.infer import MCMC

# NumPyro is imported inside the models and the NUTS/Predictive functions: the samplers that `compare` and the
# command line use do not need it, and importing it (with the scipy it pulls in) costs about 0.45 s per process.
from ecjax._src import inputs as v
from ecjax._src.prob.inputs import check_evidence
from ecjax._src.prob.sampling import dirichlet_draws, rejection_sample


# A: pseudo-observations of the default prior, per confusion matrix (or per joint table of paired systems).
PRIOR_PSEUDO_OBSERVATIONS = 2.0


def default_concentration(num_decisions: int, num_classes: int | None = None) -> float:
    """The default concentration per cell of a ``(K, D)`` confusion matrix: ``A / (K D)`` with ``A = 2``.

    ``num_classes`` defaults to ``num_decisions`` (a square matrix).  The
    same number serves the paired model, per cell of each system's matrix
    (:mod:`~ecjax._src.prob.paired`).  See the module docstring for the choice.
    """
    k = num_decisions if num_classes is None else num_classes
    return PRIOR_PSEUDO_OBSERVATIONS / (k * num_decisions)


def default_class_concentration(num_classes: int) -> float:
    """The default ``alpha_P = A / K`` of the class frequencies: the class totals of ``A / (K D)`` per cell."""
    return PRIOR_PSEUDO_OBSERVATIONS / num_classes


def check_concentration(concentration: float, name: str = "concentration", *, allow_zero: bool = True) -> float:
    """A Dirichlet concentration: one finite number ``>= 0`` (``> 0`` unless ``allow_zero``: NUTS needs a proper
    prior)."""
    return v.as_scalar(concentration, name, low=0.0, strict=not allow_zero)




# ------------------------------------------------------------ conjugate path

def _plus(counts, concentration):
    """``counts + concentration`` in float32, on the host for concrete counts (an eager add compiles a program)."""
    if v.is_tracer(counts):
        return counts + concentration
    f = jnp.result_type(float)
    return np.asarray(counts, f) + np.asarray(concentration, f)


def _rates_kernel(key, counts, concentration, *, num_draws, small_shapes):
    # Not jitted as a whole: the sampler is compiled once per process, not once per shape of counts.
    return dirichlet_draws(key, _plus(counts, concentration), num_draws, small_shapes=small_shapes)


def sample_rates(key: jax.Array, counts: ArrayLike, *, num_draws: int,
                 concentration: float | None = None) -> jax.Array:
    """Exact posterior draws of the rates ``R_ij`` for each row of ``counts``.

    ``R_i ~ Dirichlet(K_i + alpha)`` independently for every class (and
    every system in the batch axes).

    Args:
      key: ``jax.random`` key.
      counts: ``(..., K, D)`` confusion counts.
      num_draws: number of posterior draws ``S``.
      concentration: ``alpha`` added to every cell; default ``2 / (K D)``
        (:func:`default_concentration`).

    Returns:
      ``(S, ..., K, D)`` rate draws; each row sums to 1.
    """
    counts = v.as_counts(counts)
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    k, d = counts.shape[-2:]
    alpha = default_concentration(d, k) if concentration is None else check_concentration(concentration)
    check_rows_for_concentration(counts, alpha)
    if not v.is_tracer(counts):
        check_evidence(np.asarray(counts, np.float64).sum(-1).max() + alpha * d, "counts",
                       "the largest row's count plus its concentration")
    return _rates_kernel(key, counts, alpha, num_draws=num_draws, small_shapes=0 < alpha < 1)


def check_rows_for_concentration(counts: ArrayLike, alpha: float) -> None:
    """Under the improper ``Dirichlet(0)`` prior a class without test samples has no posterior."""
    if alpha == 0 and not v.is_tracer(counts) and np.any(np.asarray(counts).sum(-1) == 0):
        raise v.InputError("with `concentration=0` every class needs test samples: a row of `counts` is all zero")


# -------------------------------------------------------------- class priors

@dataclass(frozen=True, eq=False)
class PriorDistribution:
    """An uncertain vector of deployment class priors.

    Attributes:
      model: NumPyro model (no arguments) with a ``"priors"`` site of shape ``(K,)``.
      num_classes: ``K``.
      mean: ``(K,)`` expected priors.
      name: a short description.
    """

    model: Callable[[], None]
    num_classes: int
    mean: jax.Array
    name: str
    _draw: Callable | None = field(repr=False, default=None)

    def sample(self, key: jax.Array, num_draws: int) -> jax.Array:
        """``(num_draws, K)`` prior vectors."""
        num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
        if self._draw is None:
            raise v.InputError("this PriorDistribution has no sampler: build it with prob.dirichlet_priors or "
                               "prob.interval_priors")
        return self._draw(key, num_draws)


def _dirichlet_priors_draw(concentration, key, num_draws):
    return dirichlet_draws(key, concentration, num_draws)


def _dirichlet_priors_model(concentration):
    import numpyro
    import numpyro.distributions as dist
    numpyro.sample("priors", dist.Dirichlet(concentration))


def dirichlet_priors(concentration: ArrayLike) -> PriorDistribution:
    """Deployment priors ``P ~ Dirichlet(concentration)`` (a ``(K,)`` vector, entries > 0)."""
    a = v.as_array(concentration, "concentration", min_ndim=1)
    a = np.asarray(v.check_finite(a, "concentration"), dtype=np.float64)
    v.check_numbers(v.check_class_vector(a, "concentration"), "concentration", low=0.0, strict=True)
    check_evidence(a.sum(), "concentration", "the sum of the concentrations")
    conc = jnp.asarray(a, jnp.result_type(float))
    draw = partial(_dirichlet_priors_draw, conc)
    return PriorDistribution(partial(_dirichlet_priors_model, conc), a.shape[0], conc / conc.sum(),
                             f"Dirichlet({a.tolist()})", draw)


def _posterior_draws_draw(draws, key, num_draws):
    return draws[jax.random.randint(key, (num_draws,), 0, draws.shape[0])]


def _posterior_draws_model(draws):
    import numpyro
    import numpyro.distributions as dist
    index = numpyro.sample("index", dist.Categorical(logits=jnp.zeros(draws.shape[0], draws.dtype)))
    numpyro.deterministic("priors", draws[index])


def draws_priors(draws: ArrayLike, name: str = "posterior draws") -> PriorDistribution:
    """Deployment priors drawn uniformly, with replacement, from ``(S, K)`` given prior vectors (posterior draws,
    such as those of :func:`ecjax.prob.label_shift_posterior`): the empirical distribution of the draws."""
    a = np.asarray(v.check_shape(v.as_priors(draws, "draws"), "draws", "(S, K)"), dtype=np.float64)
    v.check_class_vector(a[0], "draws[0]")
    d = jnp.asarray(a, jnp.result_type(float))
    return PriorDistribution(partial(_posterior_draws_model, d), a.shape[1], jnp.asarray(a.mean(0), d.dtype),
                             f"{name} ({a.shape[0]})", partial(_posterior_draws_draw, d))


def _interval_priors_model(low, high):
    # Uniform on the simplex restricted to the box: the first K-1 coordinates are uniform in
    # their intervals and the last is 1 - their sum, which must fall in its own interval.
    import numpyro
    import numpyro.distributions as dist
    head = numpyro.sample("head", dist.Uniform(low[:-1], high[:-1]).to_event(1))
    last = 1.0 - head.sum()
    numpyro.factor("in_box", jnp.where((last >= low[-1]) & (last <= high[-1]), 0.0, -jnp.inf))
    numpyro.deterministic("priors", jnp.concatenate([head, last[None]]))


# Draws tried on a fixed key to pick the proposal; fewer than this fraction accepted: the intervals are refused.
_PILOT_DRAWS = 1 << 14
_MIN_ACCEPTANCE = 1e-3


def _box_simplex_proposals(lo, hi, dtype):
    """Three proposals for ``y = P - low`` uniform on ``{0 <= y <= w, sum(y) = r}`` (``w = high - low``,
    ``r = 1 - sum(low)``), each uniform on a superset of that slice (so rejection gives the slice's uniform law):

    * ``box``: every coordinate but the widest uniform in its interval, the widest ``r - sum`` of the others
      (the map is linear, so uniform on the hyperplane); accepts most when ``r`` is mid-range;
    * ``low``: ``r * Dirichlet(1, ..., 1)``, the simplex ``{y >= 0, sum(y) = r}``; accepts most when the upper
      bounds are far (``sum(low)`` near 1);
    * ``high``: ``w - (sum(w) - r) * Dirichlet(1, ..., 1)``, the mirror image (``sum(high)`` near 1).
    """
    k = lo.shape[0]
    w = hi - lo
    r, top = 1.0 - lo.sum(), w.sum() - (1.0 - lo.sum())
    is_widest = jnp.arange(k) == int(np.argmax(w))
    jw = jnp.asarray(w, dtype)

    def flat_dirichlet(key, n):
        e = jax.random.exponential(key, (n, k), dtype)
        return e / e.sum(-1, keepdims=True)

    def box(key, n):
        y = jnp.where(is_widest, 0.0, jax.random.uniform(key, (n, k), dtype) * jw)
        return jnp.where(is_widest, jnp.asarray(r, dtype) - y.sum(-1, keepdims=True), y)

    return {"box": jax.jit(box, static_argnums=1),
            "low": jax.jit(lambda key, n: jnp.asarray(r, dtype) * flat_dirichlet(key, n), static_argnums=1),
            "high": jax.jit(lambda key, n: jw - jnp.asarray(top, dtype) * flat_dirichlet(key, n), static_argnums=1)}


def _fill_by_rejection(propose, accept, key, num_draws, rate):
    """``num_draws`` accepted draws, each batch sized by the acceptance rate ``rate`` (known, > 0) to finish at once."""
    kept, have = [], 0
    while have < num_draws:
        key, sub = jax.random.split(key)
        size = v.bucket_length(int(1.2 * (num_draws - have) / rate) + 64)
        batch = propose(sub, min(size, 1 << 22))
        idx = np.nonzero(np.asarray(accept(batch)))[0]
        kept.append(batch[idx])
        have += len(idx)
    return jnp.concatenate(kept)[:num_draws]


def interval_priors(low: ArrayLike, high: ArrayLike, *, num_draws_for_mean: int = 200_000) -> PriorDistribution:
    """Deployment priors uniform on ``{P in simplex : low_i <= P_i <= high_i}``.

    "Prevalence of class 1 between 2 and 5 %" is
    ``interval_priors([0.95, 0.02], [0.98, 0.05])``.  Draws are exact: a
    proposal uniform on a superset of the slice (the box of all classes but
    the widest, with the widest ``1 - sum``; or the simplex of the lower or
    of the upper corner; the one a fixed pilot batch accepts most) and
    rejection, in batches sized by that acceptance rate, so the number of
    draws asked for always comes back (``K = 100`` classes with priors within
    +-50 % of ``[0.208, 0.008 x 99]``: about 100 % accepted).  Intervals
    whose best proposal accepts under 0.1 % of the pilot batch are refused
    (the same answer for every key).  For ``K = 2`` the mean is exact;
    otherwise it is a Monte Carlo estimate from ``num_draws_for_mean`` draws
    with a fixed key.
    """
    lo = np.asarray(v.check_finite(v.as_array(low, "low", min_ndim=1), "low"), dtype=np.float64)
    hi = np.asarray(v.check_finite(v.as_array(high, "high", min_ndim=1), "high"), dtype=np.float64)
    v.check_class_vector(hi, "high", num_classes=v.check_class_vector(lo, "low").shape[0])
    v.check_prior_intervals(lo, hi)
    f = jnp.result_type(float)
    jl, jh = jnp.asarray(lo, f), jnp.asarray(hi, f)
    k = lo.shape[0]
    tol = 1e-6 * max(1.0, float(np.max(hi - lo)))  # round-off of the float32 draws at the bounds
    bound = jnp.asarray(hi - lo, f)

    @jax.jit
    def accept(y):
        return jnp.all((y >= -tol) & (y <= bound + tol), -1)

    proposals = _box_simplex_proposals(lo, hi, f)
    pilot = {name: float(np.mean(np.asarray(accept(p(jax.random.key(0), _PILOT_DRAWS)))))
             for name, p in proposals.items()}
    best = max(pilot, key=lambda name: pilot[name])
    v.check_prior_acceptance(pilot[best], _MIN_ACCEPTANCE, _PILOT_DRAWS)

    def draw(key, n):
        y = _fill_by_rejection(proposals[best], accept, key, n, pilot[best])
        return jnp.clip(jl + y, jl, jh)

    if k == 2:
        # Uniform P_0 on [max(lo0, 1 - hi1), min(hi0, 1 - lo1)].
        a0, b0 = max(lo[0], 1 - hi[1]), min(hi[0], 1 - lo[1])
        mean = np.array([(a0 + b0) / 2, 1 - (a0 + b0) / 2])
    else:
        mean = np.asarray(draw(jax.random.key(0), num_draws_for_mean)).mean(0)
    return PriorDistribution(partial(_interval_priors_model, jl, jh), k, jnp.asarray(mean, f),
                             f"intervals {lo.tolist()} to {hi.tolist()}", draw)


def as_class_priors(priors: PriorDistribution | ArrayLike | None,
                    num_classes: int) -> PriorDistribution | jax.Array | None:
    """``None``, a fixed vector (validated) or a :class:`PriorDistribution` with ``K`` classes."""
    if priors is None or isinstance(priors, PriorDistribution):
        if priors is not None and priors.num_classes != num_classes:
            raise v.InputError(f"`priors` is over {priors.num_classes} classes, expected {num_classes}")
        return priors
    return v.check_class_vector(v.as_priors(priors, num_classes=num_classes), "priors", num_classes=num_classes)


def _class_prior_kernel(key, class_counts, concentration, *, num_draws):
    return dirichlet_draws(key, _plus(class_counts, concentration), num_draws)


def sample_class_priors(key: jax.Array | tuple[jax.Array, ...], priors: PriorDistribution | jax.Array | None,
                        class_counts: jax.Array | np.ndarray, *, num_draws: int,
                        concentration: float | None = None) -> jax.Array:
    """``(S, K)`` draws of the class priors used in the expected cost.

    ``priors=None``: posterior of the test set's class frequencies,
    ``Dirichlet(class_counts + alpha_P)`` (default ``alpha_P = 2 / K``); a
    fixed vector: repeated; a :class:`PriorDistribution`: its draws.
    ``key`` may be a tuple of ``G`` keys: each key's ``S`` draws as if
    drawn alone, concatenated (``(G S, K)``); with ``priors=None`` and
    concrete counts in one program (:func:`~ecjax._src.prob.sampling.dirichlet_draws`).
    """
    k = class_counts.shape[-1]
    if priors is None:
        alpha = default_class_concentration(k) if concentration is None else check_concentration(concentration)
        f = jnp.result_type(float)
        # Concrete counts stay on the host: the sampler tiles them there (a device copy would come back each call).
        counts = class_counts.astype(f) if v.is_tracer(class_counts) else np.asarray(class_counts, f)
        return _class_prior_kernel(key, counts, alpha, num_draws=num_draws)
    if isinstance(key, tuple):
        return jnp.concatenate([sample_class_priors(kb, priors, class_counts, num_draws=num_draws) for kb in key])
    if isinstance(priors, PriorDistribution):
        return priors.sample(key, num_draws)
    return jnp.broadcast_to(priors, (num_draws, k))


# ------------------------------------------------------------------ the model

def rates_model(counts: ArrayLike, concentration: float | None = None, class_counts: ArrayLike | None = None,
                prior_concentration: float | None = None) -> None:
    """NumPyro model of confusion rates; the conjugate sampler draws from its exact posterior.

    ``rates[..., i, :] ~ Dirichlet(alpha)``, ``counts[..., i, :] ~
    Multinomial(n_i, rates[..., i, :])``.  With ``class_counts`` (the test
    set's class counts, ``(K,)``) the class frequencies are also modelled:
    ``priors ~ Dirichlet(alpha_P)``, ``class_counts ~ Multinomial(N, priors)``.
    NUTS needs ``alpha > 0`` (a proper prior).
    """
    import numpyro
    import numpyro.distributions as dist
    counts = jnp.asarray(counts)
    k, d = counts.shape[-2:]
    alpha = default_concentration(d, k) if concentration is None else concentration
    rates = numpyro.sample("rates", dist.Dirichlet(jnp.full(counts.shape, alpha, jnp.result_type(float))))
    totals = counts.sum(-1)
    numpyro.sample("counts", dist.Multinomial(total_count=totals, probs=rates), obs=counts)
    if class_counts is not None:
        alpha_p = default_class_concentration(k) if prior_concentration is None else prior_concentration
        p = numpyro.sample("priors", dist.Dirichlet(jnp.full((k,), alpha_p, jnp.result_type(float))))
        numpyro.sample("class_counts", dist.Multinomial(total_count=jnp.sum(class_counts), probs=p), obs=class_counts)


def sample_rates_nuts(key: jax.Array, counts: ArrayLike, *, num_draws: int = 1000, num_warmup: int = 500,
                      num_chains: int = 2, concentration: float | None = None, class_counts: ArrayLike | None = None,
                      prior_concentration: float | None = None) -> tuple[dict[str, jax.Array], MCMC]:
    """Posterior draws of :func:`rates_model` by NUTS (``numpyro.infer.MCMC``), for checking the conjugate sampler.

    Chains run one after the other (``chain_method="sequential"``), which
    works on one CPU device.

    Returns:
      ``(samples, mcmc)``: a dict of draws grouped by chain
      (``rates``: ``(num_chains, num_draws, ..., K, D)``, and ``priors`` when
      ``class_counts`` is given) and the :class:`numpyro.infer.MCMC` object
      (for ``arviz.from_numpyro``).
    """
    from numpyro.infer import MCMC, NUTS
    counts = v.as_counts(counts)
    alpha = default_concentration(counts.shape[-1], counts.shape[-2]) if concentration is None else check_concentration(
        concentration, allow_zero=False)
    num_draws = v.as_scalar(num_draws, "num_draws", integer=True, low=1)
    num_warmup = v.as_scalar(num_warmup, "num_warmup", integer=True, low=1)
    num_chains = v.as_scalar(num_chains, "num_chains", integer=True, low=1)
    if class_counts is not None:
        class_counts = jnp.asarray(v.as_counts(jnp.asarray(class_counts)[None], "class_counts")[0])
    mcmc = MCMC(NUTS(rates_model), num_warmup=num_warmup, num_samples=num_draws, num_chains=num_chains,
                chain_method="sequential", progress_bar=False)
    mcmc.run(key, counts, alpha, class_counts, prior_concentration)
    return mcmc.get_samples(group_by_chain=True), mcmc
