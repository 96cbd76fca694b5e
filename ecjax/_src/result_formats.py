"""Results in other libraries' shapes: pandas ``DataFrame`` tables and ArviZ ``InferenceData`` posteriors.

Every result of ecjax has ``to_dict()`` (the record the command line writes as JSON), ``to_frame()`` (pandas) and,
where it holds posterior draws, ``to_arviz()``.  pandas is optional (``pip install "ecjax[pandas]"``) and ArviZ is
slow to import: both are imported when a conversion is asked for, never by ``import ecjax``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def pandas() -> Any:
    """The ``pandas`` module, or an ``ImportError`` that says how to install it (it is an optional dependency)."""
    try:
        import pandas as pd
    except ImportError as err:
        raise ImportError('to_frame() needs pandas, an optional dependency of ecjax: pip install "ecjax[pandas]" '
                          "(or pip install pandas)") from err
    return pd


def arviz() -> Any:
    """The ``arviz`` module, or an ``ImportError`` that says how to install it."""
    try:
        import arviz as az
    except ImportError as err:
        raise ImportError("to_arviz() needs arviz: pip install arviz") from err
    return az


def system_frame(systems: Sequence[str], columns: Mapping[str, Any]) -> pd.DataFrame:
    """One row per system (index ``"system"``), one column per ``(M,)`` array of ``columns``; an ``(M, 2)`` interval
    ``name`` becomes the two columns ``name_low`` and ``name_high``."""
    pd = pandas()
    flat: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        x = np.asarray(values)
        if x.ndim == 2 and x.shape[1] == 2:
            flat[f"{name}_low"], flat[f"{name}_high"] = x[:, 0], x[:, 1]
        else:
            flat[name] = x
    return pd.DataFrame(flat, index=pd.Index(list(systems), name="system"))


def pair_frame(systems: Sequence[str], tables: Mapping[str, Any]) -> pd.DataFrame:
    """One row per ordered pair ``(system, other)`` of different systems (a two-level index), one column per
    ``(M, M)`` table of ``tables`` (entry ``[a, b]`` in the row ``(systems[a], systems[b])``)."""
    pd = pandas()
    m = len(systems)
    a, b = (i.ravel() for i in np.meshgrid(np.arange(m), np.arange(m), indexing="ij"))
    keep = a != b
    a, b = a[keep], b[keep]
    index = pd.MultiIndex.from_arrays([[systems[i] for i in a], [systems[j] for j in b]], names=["system", "other"])
    return pd.DataFrame({name: np.asarray(t)[a, b] for name, t in tables.items()}, index=index)


def independent_chains(num_draws: int) -> int:
    """How many "chains" independent draws are split into for ArviZ: 4 when ``num_draws`` is a multiple of 4 and at
    least 16 (so ``arviz.summary`` can compute R-hat, which should then be 1 up to Monte Carlo noise), else 1."""
    return 4 if num_draws % 4 == 0 and num_draws >= 16 else 1


def inference_data(variables: Mapping[str, tuple[Any, Sequence[str]]], coords: Mapping[str, Sequence[Any]], *,
                   chains: int, sample_stats: Any = None) -> Any:
    """An ``arviz.InferenceData`` whose posterior holds each ``name: (draws, dims)`` of ``variables``.

    ``draws`` is ``(S, ...)`` with the chains one after another (``S = chains * draws per chain``, the order of
    NumPyro's ``get_samples()``), reshaped to ``(chain, draw, ...)``; ``dims`` names its other axes, ``coords`` their
    labels.  ``sample_stats``: an ``xarray.Dataset`` of the sampler's statistics (divergences, energy, ...) over the
    same ``(chain, draw)``, added as the ``sample_stats`` group.
    """
    az = arviz()

    def by_chain(x):
        x = np.asarray(x, dtype=np.float64)
        return x.reshape((chains, -1) + x.shape[1:])

    idata = az.from_dict(posterior={name: by_chain(x) for name, (x, _) in variables.items()},
                         coords={name: list(c) for name, c in coords.items()},
                         dims={name: list(dims) for name, (_, dims) in variables.items()})
    if sample_stats is not None:
        idata.add_groups(sample_stats=sample_stats)
    return idata


def by_system(systems: Sequence[str], values: Any) -> dict[str, Any]:
    """``{system: value}`` of an ``(M, ...)`` array, as Python floats (``(M,)``) or nested lists (``(M, ...)``): the
    shape of the JSON records."""
    x = np.asarray(values, np.float64)
    return {name: float(row) if x.ndim == 1 else row.tolist() for name, row in zip(systems, x)}


def by_pair(systems: Sequence[str], values: Any) -> dict[str, dict[str, Any]]:
    """``{a: {b: value}}`` of an ``(M, M, ...)`` array (:func:`by_system` of each row)."""
    return {name: by_system(systems, row) for name, row in zip(systems, np.asarray(values, np.float64))}
