"""NUTS as ecjax's hierarchical models run it: the settings, one run, and its ArviZ diagnostics.

:func:`~ecjax.prob.compare_test_sets`, :func:`~ecjax.prob.hierarchical_test` and
:func:`~ecjax.prob.hierarchical_compare_results` fit their models with NumPyro's NUTS (Hoffman and Gelman 2014).
They take one :class:`NUTSSettings` and report the same diagnostics (:class:`NUTSFit`): the largest split R-hat and
the smallest bulk effective sample size over the named sites (Vehtari et al. 2021), and the number of divergent
transitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

import jax

from ecjax._src import inputs as v
from ecjax._src import result_formats

# NumPyro's default target acceptance rate (Stan's ``adapt_delta``).
NUMPYRO_TARGET_ACCEPT_PROB = 0.8

# The sampler's statistics kept per draw, besides the divergences: ArviZ's ``sample_stats`` (``energy`` for the
# energy plot and BFMI, ``lp``, ``step_size``, ``n_steps``/``tree_depth``, ``acceptance_rate``).
NUTS_EXTRA_FIELDS = ("diverging", "energy", "potential_energy", "num_steps", "accept_prob", "adapt_state.step_size")


@dataclass(frozen=True)
class NUTSSettings:
    """How long NUTS runs: ``num_chains`` chains (one after another, so one CPU device is enough), each with
    ``num_warmup`` adaptation steps and ``num_samples`` kept draws.

    ``target_accept_prob`` is NUTS's target acceptance rate in ``(0, 1)``: higher means smaller steps and fewer
    divergences, at more gradient evaluations per draw.  ``None`` leaves each model its own default (0.99 for the
    hierarchical t models of :mod:`~ecjax._src.prob.from_results`, NumPyro's 0.8 for :func:`compare_test_sets`).
    """

    num_warmup: int = 500
    num_samples: int = 1000
    num_chains: int = 2
    target_accept_prob: float | None = None

    def __post_init__(self):
        for name in ("num_warmup", "num_samples", "num_chains"):
            object.__setattr__(self, name, v.as_scalar(getattr(self, name), name, integer=True, low=1))
        if self.target_accept_prob is not None:
            object.__setattr__(self, "target_accept_prob", v.as_scalar(
                self.target_accept_prob, "target_accept_prob", low=0.0, high=1.0, strict=True))

    @property
    def num_draws(self) -> int:
        """Draws kept over all chains: ``num_samples * num_chains``."""
        return self.num_samples * self.num_chains


def check_nuts_settings(nuts: object) -> NUTSSettings:
    """``nuts`` if it is a :class:`NUTSSettings` (checked when it was made), else :class:`~ecjax.InputError`."""
    return v.check_instance(nuts, NUTSSettings, "nuts", "ecjax.prob.NUTSSettings")


class NUTSFit(NamedTuple):
    """One NUTS run: the draws by site (chains concatenated), ArviZ's ``InferenceData``, its diagnostics table
    (``az.summary(kind="diagnostics")``) and the worst of them."""

    samples: dict
    inference_data: object
    diagnostics: object
    max_rhat: float
    min_ess_bulk: float
    num_divergences: int


@dataclass(frozen=True, kw_only=True)
class NUTSDiagnostics:
    """The diagnostics every NUTS-fitted result carries, declared once (keyword-only fields, after the result's own).

    Attributes:
      max_rhat: the largest split R-hat over the model's sites (Vehtari et al. 2021); NaN with one chain.
      min_ess_bulk: the smallest bulk effective sample size over those sites.
      num_divergences: divergent transitions after warm-up (more than a few per thousand draws: the posterior may
        be biased).
      inference_data: the run's ``arviz.InferenceData`` (the model's own sites, and the sampler's ``sample_stats``).
    """

    max_rhat: float = float("nan")
    min_ess_bulk: float = float("nan")
    num_divergences: int = 0
    inference_data: Any = None

    @property
    def num_chains(self) -> int:
        """The run's chains (its draws are kept one chain after another)."""
        return 1 if self.inference_data is None else int(self.inference_data.posterior.sizes["chain"])

    def posterior_variables(self) -> tuple[dict[str, tuple[Any, Sequence[str]]], Mapping[str, Sequence[Any]]]:
        """What :meth:`to_arviz` puts in the posterior: ``({name: ((S, ...) draws, dims)}, coords)``."""
        raise NotImplementedError

    def to_arviz(self) -> Any:
        """An ``arviz.InferenceData``: the result's draws (in the result's units) by NUTS chain, with the run's
        ``sample_stats`` (divergences, energy, ...), so ``arviz.summary``, ``arviz.plot_energy`` and
        ``arviz.bfmi`` work on them.  The model's own parametrization is :attr:`inference_data`."""
        variables, coords = self.posterior_variables()
        stats = getattr(self.inference_data, "sample_stats", None)
        return result_formats.inference_data(variables, coords, chains=self.num_chains, sample_stats=stats)


def _worst(values, pick) -> float:
    """``pick`` of the diagnostics that are defined (R-hat is NaN with one chain), NaN when none is.

    An infinite R-hat (a chain that never moved) is kept: it is the loudest warning there is.
    """
    values = np.asarray(values, np.float64)
    values = values[~np.isnan(values)]
    return float(pick(values)) if values.size else float("nan")


def fit_nuts(key: jax.Array, model: Callable, args: tuple, nuts: NUTSSettings, *, var_names: list[str],
             target_accept_prob: float = NUMPYRO_TARGET_ACCEPT_PROB) -> NUTSFit:
    """NUTS on ``model(*args)``, chains one after another; ArviZ diagnostics over ``var_names``.

    ``target_accept_prob`` is the model's default, used when ``nuts.target_accept_prob`` is ``None``.
    """
    import arviz as az  # slow to import: only once the inputs are known to be good
    from numpyro.infer import MCMC, NUTS  # as slow: `ecjax.prob` loads this module without them

    accept = target_accept_prob if nuts.target_accept_prob is None else nuts.target_accept_prob
    mcmc = MCMC(NUTS(model, target_accept_prob=accept), num_warmup=nuts.num_warmup,
                num_samples=nuts.num_samples, num_chains=nuts.num_chains, chain_method="sequential",
                progress_bar=False)
    mcmc.run(key, *args, extra_fields=NUTS_EXTRA_FIELDS)
    idata = az.from_numpyro(mcmc)
    diagnostics = az.summary(idata, var_names=var_names, kind="diagnostics")
    return NUTSFit(samples=mcmc.get_samples(), inference_data=idata, diagnostics=diagnostics,
                   max_rhat=_worst(diagnostics["r_hat"].to_numpy(), np.max),
                   min_ess_bulk=_worst(diagnostics["ess_bulk"].to_numpy(), np.min),
                   num_divergences=int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum()))
