"""The inputs of :mod:`ecjax.prob`, made canonical once: the systems a comparison evaluates (:class:`Systems`), the
metric of :func:`~ecjax.prob.bootstrap_metric` (:class:`MetricSpec`) and per-fold results.

:func:`~ecjax.prob.compare` and :func:`~ecjax.prob.bootstrap_metric` take their data as one
:class:`Systems`: each classifier's decisions or scores on its test samples, with the labels, the names, whether
the systems were run on the same samples (paired), cluster ids and frequency weights.  Everything about the data
that does not depend on the function that evaluates it is checked here, when the object is made; what depends on
it (labels below the utility matrix's ``K``, scores that are proper log-posteriors) is checked by that function.

Per-fold results (:func:`as_fold_results`, :func:`fold_differences`, :func:`results_per_dataset`) are the inputs of
:mod:`~ecjax._src.prob.from_results`: one number per fold for each system, finite, at least 2 folds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ecjax._src import inputs as v
from ecjax._src.costs import StructuredCosts
from ecjax._src.prob.draw_plan import PerDraw, as_decision_rule

# One array for all systems, or one per system (a list, or a mapping from system names).
PerSystem = ArrayLike | Sequence[ArrayLike] | Mapping[str, ArrayLike]


@dataclass(frozen=True, init=False, eq=False, repr=False)
class Systems:
    """``M`` classifiers' decisions or scores on their test samples: the data of :func:`~ecjax.prob.compare`.

    ``Systems(labels, decisions)`` or ``Systems(labels, scores=s, score_type=...)``.

    Args:
      labels: ``(N,)`` true classes shared by all systems, or ``(M, N)`` /
        a list / a mapping of one label vector per system (unpaired systems
        may have different test sets, of different sizes).
      decisions: ``(M, N)`` decisions, a list of ``(N_m,)`` arrays, or a
        mapping ``name -> decisions``.
      scores: instead of ``decisions``: ``(M, N, K)`` scores (``(M, N)`` for
        ``"llr"``), a list or a mapping of ``(N_m, K)`` arrays (or of
        :class:`ecjax.inputs.Scores` values, made canonical already).
      score_type: what the scores are (``"log_posteriors"``, ``"logits"``,
        ``"probabilities"``, ``"llr"``, ``"log_likelihoods"``).
      decision_rule: with ``scores``, how they become decisions while the
        costs are uncertain: ``"expected_utility"`` (default), ``"per_draw"``
        or :class:`~ecjax.prob.PerDraw` (see :func:`~ecjax.prob.compare`).
        Refused with ``decisions``, which are given (never ignored).
      names: the systems' names (default: the mapping's keys, else
        ``"system 0"``, ``"system 1"``, ...).
      paired: the systems were run on the same test samples (default), so
        their errors are correlated: every system's labels (and weights) must
        then be the same.  ``False`` for independent test sets.
      groups: ``(N,)`` cluster ids of the shared samples (paired systems or
        one system): samples of one cluster are resampled together.
      sample_weight: frequency weights, given like ``labels`` (one ``(N,)``
        vector for all, or one per system); 0 removes a sample.

    Attributes hold the data split per system: ``names``, ``labels``
    (``int32`` index vectors), ``decisions`` (index vectors) or ``scores``
    (as given, one array per system) with :attr:`canonical`, the same scores
    made canonical once, ``sample_weight`` (``float64``
    vectors, or ``None``), ``groups`` and the rest as given.  It holds arrays,
    so two ``Systems`` compare by identity.
    """

    names: tuple[str, ...]
    labels: tuple[Any, ...]
    decisions: tuple[Any, ...] | None
    scores: tuple[Any, ...] | None
    score_type: str
    decision_rule: str | PerDraw
    paired: bool
    groups: np.ndarray | None
    sample_weight: tuple[np.ndarray, ...] | None

    def __init__(self, labels: PerSystem, decisions: PerSystem | None = None, *, scores: PerSystem | None = None,
                 score_type: str = "log_posteriors", decision_rule: str | PerDraw | None = None,
                 names: Sequence[str] | None = None, paired: bool = True, groups: ArrayLike | Sequence[Any] | None = None,
                 sample_weight: PerSystem | None = None) -> None:
        if (decisions is None) == (scores is None):
            raise v.InputError("give exactly one of `decisions` and `scores`")
        decision_rule = check_decision_rule(decision_rule, scores is not None)
        if scores is not None:
            v.check_score_type(score_type)
            found_names, items = _split_scores(scores, score_type)
        else:
            found_names, items = _split_decisions(decisions)
            items = [v.as_index_array(x, f"decisions[{m}]") for m, x in enumerate(items)]
            for m, x in enumerate(items):
                if x.ndim != 1:
                    raise v.InputError(
                        f"each system's decisions must be a vector, got shape {tuple(x.shape)} for system {m}")
        num_systems = len(items)
        label_list = [v.as_index_array(x, "labels") for x in _split_labels(labels, num_systems, found_names)]
        for m, (lab, x) in enumerate(zip(label_list, items)):
            if lab.ndim != 1:
                raise v.InputError(f"`labels` of system {m} must be a vector, got shape {tuple(lab.shape)}")
            n = np.shape(x)[0]
            if lab.shape[0] != n:
                raise v.InputError(f"`labels` of system {m} has {lab.shape[0]} entries, but its "
                                   f"{'scores' if scores is not None else 'decisions'} have {n}")
        weight_list = _split_weights(sample_weight, label_list, found_names)
        paired = v.as_flag(paired, "paired")
        if paired and num_systems > 1:
            _check_paired_labels(label_list)
            if weight_list is not None:
                _check_paired_weights(weight_list)
        if groups is not None:
            if not (num_systems == 1 or paired):
                raise v.InputError("`groups` (clustered samples) needs paired systems (shared labels) or a single "
                                   "system")
            v.as_group_index(groups, label_list[0].shape[0])  # numbers or strings, no NaN (NaN != NaN) or inf
            groups = v.as_group_ids(groups, label_list[0].shape[0])
        fields = dict(names=v.system_names(names, found_names, num_systems, "names"), labels=tuple(label_list),
                      decisions=None if scores is not None else tuple(items),
                      scores=None if scores is None else tuple(items), score_type=score_type,
                      decision_rule=decision_rule, paired=paired, groups=groups,
                      sample_weight=None if weight_list is None else tuple(weight_list))
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        sizes = sorted({int(lab.shape[0]) for lab in self.labels})
        what = f"scores ({self.score_type})" if self.scores is not None else "decisions"
        return (f"Systems({list(self.names)}, {what}, N = {sizes[0] if len(sizes) == 1 else sizes}, "
                f"{'paired' if self.paired else 'unpaired'}{', clustered' if self.groups is not None else ''}"
                f"{', weighted' if self.sample_weight is not None else ''})")

    @cached_property
    def canonical(self) -> tuple[v.Scores, ...] | None:
        """The scores made canonical once (``None`` with decisions): one :class:`ecjax.inputs.Scores` per system,
        checked by :func:`~ecjax._src.inputs.as_scores` when first used (by :func:`~ecjax.prob.compare` or
        :func:`~ecjax.prob.bootstrap_metric`, whose errors they stay) and kept, in the log domain with
        their kind and ``K``; every consumer takes them as they are.  Values given as ``Scores`` are kept as given."""
        if self.scores is None:
            return None
        return tuple(v.canonical_scores(x, f"scores[{m}]", score_type=self.score_type)
                     for m, x in enumerate(self.scores))

    @property
    def num_systems(self) -> int:
        """``M``."""
        return len(self.labels)

    @property
    def shared(self) -> bool:
        """One test set for every system: a single system, or paired ones."""
        return self.num_systems == 1 or self.paired


def check_decision_rule(decision_rule: object, scores_given: bool) -> str | PerDraw:
    """The ``decision_rule`` of a :class:`Systems`: how its scores become decisions (``None``: the default,
    ``"expected_utility"``), checked by :func:`~ecjax._src.prob.draw_plan.as_decision_rule`.  Given decisions have no
    rule to apply, so a rule given with them is refused rather than ignored."""
    if decision_rule is None:
        return "expected_utility"
    if not scores_given:
        raise v.InputError(f"`decision_rule` ({decision_rule!r}) says how scores become decisions, but the systems "
                           "are given as `decisions`: remove it, or give `scores=`")
    as_decision_rule(decision_rule)
    return decision_rule  # type: ignore[return-value]


def as_named_counts(counts: object, *, system_axis: int = 0) -> tuple[tuple[str, ...] | None, jax.Array]:
    """``(names or None, counts)``: confusion counts of ``M`` systems, given stacked or as a mapping ``{name:
    counts}`` whose values are stacked along ``system_axis`` (0 for ``(M, K, D)``, 1 for ``(T, M, K, D)``),
    checked by :func:`~ecjax._src.inputs.as_counts`."""
    names = None
    if isinstance(counts, Mapping):
        if not counts:
            raise v.InputError("`counts` is an empty mapping: at least one system is needed")
        names = tuple(v.check_distinct_keys(counts, "counts"))
        counts = np.stack([np.asarray(c) for c in counts.values()], axis=system_axis)
    return names, v.as_counts(counts)


def check_systems(systems: object) -> Systems:
    """``systems`` if it is a :class:`Systems` (checked when it was made), else :class:`~ecjax.InputError`."""
    return v.check_instance(systems, Systems, "systems", "ecjax.prob.Systems")


def _systems_from(x, name):
    """Names and per-system arrays from a mapping, a sequence of arrays, or one stacked array."""
    if isinstance(x, Mapping):
        if not x:
            raise v.InputError(f"`{name}` is empty")
        return v.check_distinct_keys(x, name), [x[k] for k in x]
    if isinstance(x, Sequence) and not isinstance(x, (str, bytes)) and len(x) and not np.isscalar(x[0]):
        return None, list(x)
    return None, None


def _split_decisions(decisions):
    names, items = _systems_from(decisions, "decisions")
    if items is None:
        arr = v.as_array(decisions, "decisions", min_ndim=1)
        items = [arr] if arr.ndim == 1 else list(arr)
        if arr.ndim > 2:
            raise v.InputError(f"`decisions` must be (N,) or (M, N), got shape {tuple(arr.shape)}")
    return names, items


def _array_of(scores):
    """A system's scores as an array: those given, or the values of a :class:`ecjax.inputs.Scores` given."""
    return scores.values if isinstance(scores, v.Scores) else scores


def _split_scores(scores, score_type):
    names, items = _systems_from(scores, "scores")
    if items is None:
        arr = v.as_array(scores, "scores", min_ndim=1)
        single = 1 if score_type == "llr" else 2
        if arr.ndim == single:
            items = [arr]
        elif arr.ndim == single + 1:
            items = list(arr)
        else:
            raise v.InputError(f"`scores` must have {single} or {single + 1} dimensions, got shape {tuple(arr.shape)}")
    return names, items


def _per_system(x, name, num_systems, names, what):
    """One vector of ``x`` per system: a mapping keyed like ``decisions``/``scores``, a list or ``(M, N)`` array,
    or one ``(N,)`` vector for every system (``labels``, ``sample_weight``)."""
    if isinstance(x, Mapping):
        if names is None or set(map(str, x)) != set(names):
            raise v.InputError(f"`{name}` given as a mapping must have the same keys as `decisions`/`scores`")
        lookup = {str(k): val for k, val in x.items()}
        return [lookup[n] for n in names]
    _, items = _systems_from(x, name)
    if items is None:
        arr = v.as_array(x, name, min_ndim=1)
        if arr.ndim == 1:
            return [arr] * num_systems
        if arr.ndim != 2:
            raise v.InputError(f"`{name}` must be (N,) or (M, N), got shape {tuple(arr.shape)}")
        items = list(arr)
    if len(items) != num_systems:
        raise v.InputError(f"`{name}` has {len(items)} {what} for {num_systems} systems")
    return items


def _split_labels(labels, num_systems, names):
    return _per_system(labels, "labels", num_systems, names, "label vectors")


def _check_paired_labels(label_list):
    first = np.asarray(label_list[0])
    for m, lab in enumerate(label_list[1:], start=1):
        lab = np.asarray(lab)
        if lab.shape != first.shape:
            raise v.InputError(
                f"paired systems must share their labels: system {m} has {lab.shape[-1]} samples, system 0 has "
                f"{first.shape[-1]}; pass paired=False for systems scored on different samples"
            )
        diff = np.nonzero(lab != first)[0]
        if diff.size:
            raise v.InputError(
                f"paired systems must share their labels: labels of system {m} differ from system 0 at sample "
                f"{int(diff[0])} ({lab[diff[0]]} vs {first[diff[0]]}); pass paired=False for systems scored on "
                "different samples or in different orders"
            )
    return first


def _split_weights(sample_weight, label_list, names):
    """One validated float64 weight vector per system, given like ``labels`` (``None``: unweighted).

    A mapping (keys of ``decisions``/``scores``), a list or ``(M, N)`` array
    of one vector per system, or one ``(N,)`` vector for every system.  A
    system whose weights are all 0 has no samples: refused.
    """
    if sample_weight is None:
        return None
    m = len(label_list)
    items = _per_system(sample_weight, "sample_weight", m, names, "weight vectors")
    out = []
    for j, (w, lab) in enumerate(zip(items, label_list)):
        where = f" (system {j})" if m > 1 else ""
        try:
            v.as_sample_weight(w, lab)  # one finite, non-negative number per sample
        except v.InputError as e:
            raise v.InputError(f"{e}{where}") from None
        w = np.asarray(w, np.float64)
        v.check_some_weight(w, where)
        check_evidence(w.sum(), "sample_weight", f"the total weight{where}")  # the weights are evidence
        out.append(w)
    return out


def _check_paired_weights(weight_list):
    """Paired systems are scored on the same samples: one weight per sample, the same for every system."""
    for j, w in enumerate(weight_list[1:], start=1):
        diff = np.flatnonzero(w != weight_list[0])
        if diff.size:
            raise v.InputError(
                f"paired systems share their samples, so they must share `sample_weight`: the weights of system {j} "
                f"differ from system 0 at sample {int(diff[0])} ({w[diff[0]]} vs {weight_list[0][diff[0]]}); give one "
                "(N,) vector, or pass paired=False"
            )


class PairedScores(NamedTuple):
    """The data of :func:`~ecjax.prob.bootstrap_metric`: ``M`` systems' scores on one shared test set.

    ``labels`` ``(N,)`` int32; ``scores`` stacked on the host as given, ``(M, N, K)`` (``(M, N)`` for ``"llr"``);
    ``groups`` and ``sample_weight`` ``(N,)`` or ``None``; ``names`` the ``M`` systems' names.
    """

    labels: Any
    scores: np.ndarray
    score_type: str
    groups: np.ndarray | None
    sample_weight: np.ndarray | None
    names: tuple[str, ...]


def paired_scores(systems: object) -> PairedScores:
    """A :class:`Systems` of scores (not decisions), paired (or one system), of one shape, with no decision rule to
    apply: the data that a reweighting of the shared samples evaluates."""
    systems = check_systems(systems)
    if systems.scores is None:
        raise v.InputError("`systems` holds decisions: bootstrap_metric evaluates scores (make the Systems with "
                           "`scores=`)")
    if not systems.shared:
        raise v.InputError("bootstrap_metric reweights the samples of one test set: `systems` must be paired")
    if systems.decision_rule != "expected_utility":
        raise v.InputError("`systems.decision_rule` does not apply to bootstrap_metric, which evaluates the scores "
                           "themselves")
    arrays = [np.asarray(_array_of(s)) for s in systems.scores]
    if len({a.shape for a in arrays}) != 1:
        raise v.InputError(f"`scores` systems must have the same shape, got {[a.shape for a in arrays]}")
    weights = None if systems.sample_weight is None else systems.sample_weight[0]
    return PairedScores(systems.labels[0], np.stack(arrays), systems.score_type, systems.groups, weights,
                        systems.names)


def stacked_scores(systems: Systems) -> v.Scores:
    """The canonical scores (:attr:`Systems.canonical`) of the paired systems of :func:`paired_scores` stacked into
    one :class:`ecjax.inputs.Scores`, ``(M, N, K)`` (``(M, N)`` for ``"llr"``): checked once, not again."""
    canonical = systems.canonical
    assert canonical is not None, "stacked_scores needs the scores of paired_scores"
    first = canonical[0]
    zeros = None
    if any(s.exact_zeros is not None for s in canonical):
        zeros = np.stack([np.zeros(np.shape(s.values), bool) if s.exact_zeros is None else s.exact_zeros
                          for s in canonical])
    # Stacked on the host: an eager device stack would compile a program for every new shape.
    return v.Scores(v.to_device(np.stack([np.asarray(s.values) for s in canonical])), first.num_classes,
                    first.score_type, zeros)


@dataclass(frozen=True)
class MetricSpec:
    """A metric of the scores and its direction, checked against the options it is given.

    ``metric``: a built-in name or a user function ``f(labels, log_posteriors, weights) -> scalar``;
    ``higher_is_better``: its direction; ``binary``: it needs ``K = 2``; ``options``: the keyword options
    (``"priors"``, ``"costs"``) its kernel takes (none for a user function).
    """

    metric: str | Callable[..., Any]
    higher_is_better: bool
    binary: bool
    options: tuple[str, ...]


def as_metric_spec(metric: object, higher_is_better: object, *, builtins: Mapping[str, Any], score_type: str,
                   priors: object = None, costs: object = None) -> MetricSpec:
    """The :class:`MetricSpec` of ``metric``: a name of ``builtins`` (each with ``higher_is_better``, ``binary`` and
    ``options``), whose known direction ``higher_is_better`` may only repeat, or a callable, whose direction
    ``higher_is_better`` must give (True or False).  ``priors`` (with posterior-type ``score_type``) and ``costs``
    are refused where the metric would not use them: never a silent no-op."""
    v.check_score_type(score_type)
    if isinstance(metric, str):
        v.check_choice(metric, "metric", tuple(builtins))
        known = builtins[metric]
        if higher_is_better is not None and bool(higher_is_better) != known.higher_is_better:
            raise v.InputError(f"`higher_is_better`: metric {metric!r} is "
                               f"{'higher' if known.higher_is_better else 'lower'} is better; leave "
                               "higher_is_better=None for a built-in metric")
        spec = MetricSpec(metric, known.higher_is_better, known.binary, tuple(known.options))
    elif not callable(metric):
        raise v.InputError(f"`metric` must be one of {tuple(builtins)} or a function "
                           f"f(labels, log_posteriors, weights) -> scalar, got {metric!r}")
    elif not isinstance(higher_is_better, (bool, np.bool_)):
        raise v.InputError("`higher_is_better` must be True or False for a user metric (which way is better?), got "
                           f"{higher_is_better!r}")
    else:
        spec = MetricSpec(metric, bool(higher_is_better), False, ())
    _check_options_used(spec, builtins, score_type, priors, costs)
    return spec


def _check_options_used(spec, builtins, score_type, priors, costs):
    what = repr(spec.metric) if isinstance(spec.metric, str) else "a user function"
    if priors is not None and score_type not in v.LIKELIHOOD_TYPES and "priors" not in spec.options:
        takers = tuple(name for name, b in builtins.items() if "priors" in b.options)
        raise v.InputError(f"`priors` are not used by metric {what} with posterior-type scores (score_type="
                           f"{score_type!r}): only {takers} take evaluation priors; remove them")
    if costs is not None and "costs" not in spec.options:
        takers = " or ".join(repr(name) for name, b in builtins.items() if "costs" in b.options)
        raise v.InputError(f"`costs` are only used by metric {takers}, got metric={spec.metric!r}")


def check_class_support(class_totals: ArrayLike, priors: ArrayLike | None, *, both_classes_for: str | None,
                        weighted: bool = False) -> None:
    """Class totals ``(K,)`` (sample counts, or weight totals when ``weighted``) that a metric can average over.

    ``both_classes_for``: the name of a metric that needs samples of both classes (a ranking metric), else ``None``;
    ``priors``: evaluation priors ``(K,)`` (or ``None``), which may not weigh a class with a total of 0.
    """
    totals = np.asarray(class_totals)
    if both_classes_for is not None and np.count_nonzero(totals) < 2:
        subject = "`sample_weight` leaves" if weighted else "`labels` has"
        raise v.InputError(f"{subject} a single class: metric {both_classes_for!r} needs samples of both classes")
    if priors is not None and np.any((totals == 0) & (np.asarray(priors) > 0)):
        where = "whose samples all have `sample_weight` 0" if weighted else "with no sample in `labels`"
        raise v.InputError(f"`priors` give weight to a class {where}: its average is undefined")


# The most evidence one Dirichlet posterior may hold: weighted samples, or the prior's pseudo-observations.  Past it the
# posterior's spread, about 1 / sqrt(evidence) = 3e-8 at 2^50, is below float32's resolution (1.2e-7), so the draws
# could not differ from the mean anyway; and far past it they fail without an error: float32 Gamma draws overflow
# (3.4e38) into a sampler that never accepts (it hung) or rows of zeros, and the paired prior's stick breaking divides
# by log(A / (1 + A)), which is 0 in float64 from A = 2^53 (a ZeroDivisionError).
MAX_EVIDENCE = 2.0**50


def check_evidence(total: float, name: str, what: str) -> None:
    """``total`` evidence of a Dirichlet posterior (``what`` says whose, for the message) at most
    :data:`MAX_EVIDENCE`, else :class:`InputError` naming ``name``."""
    try:
        v.as_scalar(total, name, high=MAX_EVIDENCE, finite=False)
    except v.InputError:
        raise v.InputError(f"`{name}`: {what} is {total:.3g}, above the {MAX_EVIDENCE:.3g} a posterior draw can hold "
                           "in float32 (its spread would be below float32's resolution); scale it down",
                           argument=name) from None


def check_decisions_matter(low: ArrayLike | StructuredCosts, high: ArrayLike | None = None,
                           name: str = "costs") -> None:
    """A ``(K, D)`` cost or utility matrix ``low`` (or, with ``high``, every matrix whose entries lie in
    ``[low, high]``) under which some decision matters: in some row (true class) two decisions differ.

    If every row is one number (``C[k, d] = a_k``; all zeros, say), the expected cost
    ``sum_k P_k sum_d R_kd C_kd = sum_k P_k a_k`` is the same for every classifier whatever it decides: no system can
    be preferred, and a ranking would only reflect the Monte Carlo noise.  Traced matrices pass.
    """
    if v.is_tracer(low) or (high is not None and v.is_tracer(high)):
        return
    if isinstance(low, StructuredCosts):  # rows of one number: correct = wrong (= abstain) in every class
        fields = [low.correct] + ([] if low.abstain is None else [low.abstain])
        if all(np.array_equal(np.asarray(x), np.asarray(low.wrong)) for x in fields):
            raise v.InputError(f"`{name}`: every decision has the same value for each true class (correct = wrong"
                               f"{' = abstain' if low.abstain is not None else ''}), so every system has the same "
                               "expected cost whatever it decides and none can be preferred")
        return
    lo = np.asarray(low, np.float64)
    hi = lo if high is None else np.asarray(high, np.float64)
    if np.array_equal(lo, hi) and np.all(lo == lo[:, :1]):
        subject = f"`{name}`" if high is None else f"`{name}` (every matrix inside the [low, high] intervals)"
        zeros = ", all zeros" if not np.any(lo) else ""
        raise v.InputError(f"{subject}: every decision has the same value for each true class (each row is one "
                           f"number{zeros}), so every system has the same expected cost whatever it decides and none "
                           "can be preferred; give a matrix under which some decision costs more than another")


def check_structured_comparison(groups: object, *, scores_per_draw: bool) -> None:
    """Structured costs (:class:`ecjax.costs.StructuredCosts`) in :func:`ecjax.prob.compare` are fixed: their merged
    cells are counted from fixed decisions (given, or the Bayes decisions of scores made once), so neither the
    clustered model (it draws every ``(class, decision)`` cell) nor ``decision_rule="per_draw"`` applies."""
    for given, what in ((groups is not None, "`groups` (the clustered model)"),
                        (scores_per_draw, "decision_rule='per_draw'")):
        if given:
            problem = (f"structured costs compare fixed decisions (their cells are counted from them, at any K); "
                       f"{what} is not supported with them: leave it out, or give a dense (K, D) matrix "
                       "(`.dense()`) where it fits in memory")
            raise v.InputError(f"`costs` {problem}", problem=problem)


def check_curve_grid(grid: object, curve: str) -> np.ndarray:
    """The grid of a curve band (:mod:`~ecjax._src.prob.curve_bands`) as float64: one non-empty vector of finite numbers
    in ``[0, 1]`` (false-alarm rates of a ROC), ``(0, 1]`` for the recalls of a precision-recall curve (no
    precision exists at recall 0)."""
    g = np.asarray(v.check_finite(v.as_array(grid, "grid", min_ndim=1), "grid"), np.float64)
    if g.ndim != 1 or g.size == 0:
        raise v.InputError(f"`grid` must be one non-empty vector of {curve} points, got shape {g.shape}")
    low_ok = g > 0 if curve == "recall" else g >= 0
    if not np.all(low_ok & (g <= 1)):
        bad = g[~(low_ok & (g <= 1))][0]
        span = "(0, 1] (no precision exists at recall 0)" if curve == "recall" else "[0, 1]"
        raise v.InputError(f"`grid` ({curve} points) must lie in {span}, got {bad}")
    return g


# ------------------------------------------------------------------------------------------ per-fold results

# Fold results equal up to rounding: ``b - a`` of two numbers rounded to a float type is off by up to about 1.5 units
# in the last place (ulp) of ``max(|a|, |b|)``; 64 ulps leave room for a few more roundings upstream (an accuracy
# computed as a ratio, a mean over runs) and stay far below any spread the float type can resolve.
ROUNDING_ULPS = 64


def fold_rounding(x: object) -> float:
    """The relative rounding of fold results ``x`` as given: ``ROUNDING_ULPS`` machine epsilons of their float type.

    float32 results (a NumPy or JAX float32 array) round at ``2^-23``, float64 ones (Python floats, numbers read
    from a file) at ``2^-52``; integers and booleans are exact, but their differences are stored as float64.  A
    list of arrays (several data sets) rounds like its coarsest member.
    """
    if isinstance(x, (list, tuple)) and x and not np.isscalar(x[0]):
        return max(fold_rounding(item) for item in x)
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    eps = float(jnp.finfo(dtype).eps) if jnp.issubdtype(dtype, jnp.inexact) else float(np.finfo(np.float64).eps)
    return ROUNDING_ULPS * max(eps, float(np.finfo(np.float64).eps))


def as_fold_results(x: object, name: str, *, min_ndim: int) -> jax.Array | np.ndarray:
    """Finite per-fold results with at least ``min_ndim`` axes and at least 2 folds (the last axis).

    Concrete input stays a float64 host array (differences of results near 1
    are taken before the float32 cast, which would cost them ~1e-7 each);
    traced input is cast to the default float type.
    """
    arr = v.check_numbers(v.as_array(x, name, min_ndim=min_ndim), name, booleans=True)
    if arr.shape[-1] < 2:
        raise v.InputError(f"`{name}` needs at least 2 folds (last axis), got shape {tuple(arr.shape)}: the "
                           "variance of one difference is undefined")
    return arr.astype(jnp.result_type(float)) if v.is_tracer(arr) else np.asarray(arr, np.float64)


class FoldDifferences(NamedTuple):
    """Per-fold differences (float64 on the host, or traced), how messages call them, and their rounding.

    ``tolerance`` ``(...)``: per row, the absolute rounding of the differences, :func:`fold_rounding` times the
    largest ``|result|`` the row was computed from (``|a|`` and ``|b|``, or ``|d|`` when the differences are given).
    """

    values: jax.Array | np.ndarray
    name: str
    tolerance: jax.Array | np.ndarray


def _largest_magnitude(*arrays):
    """``max |x|`` over the last axis (the folds) of every array, elementwise over the leading axes."""
    xp = jnp if any(v.is_tracer(x) for x in arrays) else np
    return xp.max(xp.stack([xp.max(xp.abs(x), axis=-1) for x in arrays]), axis=0)


def fold_differences(scores_a: object, scores_b: object, *, min_ndim: int) -> FoldDifferences:
    """``scores_b - scores_a`` (:func:`as_fold_results` each, of one shape), or ``scores_a`` itself, read as the
    differences, when ``scores_b`` is ``None``; with their rounding (:class:`FoldDifferences`)."""
    if scores_b is None:
        d = as_fold_results(scores_a, "differences", min_ndim=min_ndim)
        return FoldDifferences(d, "differences", fold_rounding(scores_a) * _largest_magnitude(d))
    a = as_fold_results(scores_a, "scores_a", min_ndim=min_ndim)
    b = as_fold_results(scores_b, "scores_b", min_ndim=min_ndim)
    if a.shape != b.shape:
        raise v.InputError(f"`scores_a` and `scores_b` must have the same shape, got {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    rtol = max(fold_rounding(scores_a), fold_rounding(scores_b))
    return FoldDifferences(b - a, "differences (scores_b - scores_a)", rtol * _largest_magnitude(a, b))


def flat_fold_rows(differences: ArrayLike, tolerance: ArrayLike = 0.0) -> tuple[Any, Any]:
    """``(flat, zero)``, each of the batch shape of ``(..., n)`` differences: the rows whose spread over the folds
    (``max - min``) is within ``tolerance`` (constant up to rounding), and those of them that are 0 up to rounding
    (``max |d| <= tolerance``: identical systems).  NumPy on the host, jnp for traced differences."""
    xp = jnp if v.is_tracer(differences) else np
    d = differences
    flat = xp.max(d, axis=-1) - xp.min(d, axis=-1) <= tolerance
    return flat, flat & (xp.max(xp.abs(d), axis=-1) <= tolerance)


def check_fold_spread(differences: ArrayLike, name: str, rows: Sequence[str] | None = None, *,
                      tolerance: ArrayLike = 0.0) -> None:
    """Per-fold differences ``(..., n)`` with a proper posterior: no row is the same non-zero number on every fold
    up to rounding (:func:`flat_fold_rows` with ``tolerance``, :attr:`FoldDifferences.tolerance`).

    Zero variance would make the posterior of that row's mean a point mass away from 0 (baycomp reports
    ``P = 1``); a row of zeros (identical systems, up to rounding) is fine.  ``rows`` names the rows of a 2-D
    array (a pair of systems, ``"b - a"``); without it a row is named by its batch index.  Traced differences pass.
    """
    if v.is_tracer(differences):
        return
    d = np.asarray(differences)
    flat, zero = flat_fold_rows(d, np.asarray(tolerance))
    constant = flat & ~zero
    if not np.any(constant):
        return
    first = tuple(int(i) for i in np.argwhere(constant)[0])
    if rows is not None:
        subject, at = f"`{name}`: {rows[first[0]]}", ""
    else:
        subject, at = f"`{name}`", f" (at batch index {first})" if d.ndim > 1 else ""
    spread = float(np.ptp(d[first]))
    raise v.InputError(
        f"{subject} is the same non-zero number on every fold{at}: zero variance makes the posterior of the mean "
        f"difference a point mass claiming certainty (baycomp reports P = 1; here the spread over the folds is "
        f"{spread:.3g}, within the rounding of the results, {ROUNDING_ULPS} units in their last place); compare on "
        "data that vary between folds, or set the differences to 0 if the systems are truly identical")


def check_pair_spread(results: np.ndarray, name: str, systems: Sequence[str], rtol: float, where: str = "") -> None:
    """:func:`check_fold_spread` of every pair ``b - a`` (``a < b``) of ``(M, n)`` fold results, one pair at a time
    (memory ``O(n)``), each within ``rtol`` times the largest ``|result|`` of the pair; ``where`` ends the row's
    name (``" on data set 2"``)."""
    m = results.shape[0]
    for a in range(m):
        for b in range(a + 1, m):
            tolerance = rtol * _largest_magnitude(results[a], results[b])
            check_fold_spread((results[b] - results[a])[None], name, rows=[f"{systems[b]} - {systems[a]}{where}"],
                              tolerance=np.asarray(tolerance)[None])


def check_several_datasets(num_datasets: int, name: str, single: str) -> None:
    """A model of a population of data sets needs at least 2 of them; ``single`` says what compares one."""
    if num_datasets < 2:
        raise v.InputError(f"`{name}` must hold at least 2 data sets for a population of data sets, got "
                           f"{num_datasets}: a hierarchical model over data sets needs at least 2 to learn their "
                           f"spread (for one data set use {single})")


def check_dataset_spread(differences: np.ndarray, name: str, tolerance: ArrayLike) -> None:
    """``(q, n)`` differences of the hierarchical test: no data set's differences constant over its folds up to
    rounding (zeros included), where the model's likelihood is unbounded as that set's ``sigma -> 0``."""
    flat, _ = flat_fold_rows(differences, tolerance)
    if np.any(flat):
        raise v.InputError(
            f"`{name}`: data set {int(np.argmax(flat))} has the same difference on every fold, up to rounding; "
            "with no within-set spread the hierarchical model's likelihood is unbounded as that set's sigma -> 0 "
            "(baycomp replaces such rows with random numbers in the ROPE); leave the set out or compare it alone")


def check_draws_fit(num_draws: int, bytes_per_draw: int, name: str = "num_draws") -> None:
    """Refuse ``num_draws`` draws whose arrays, ``bytes_per_draw`` each, would take more than half the memory of
    the machine (the draws are kept: a ranking and its intervals need all of them)."""
    try:
        import os

        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # a platform without sysconf: assume 16 GiB
        available = 16 * 2**30
    need = num_draws * bytes_per_draw
    if need > available // 2:
        raise v.InputError(f"`{name}` = {num_draws} draws would need about {need / 2**30:.1f} GiB, more than half "
                           f"of this machine's {available / 2**30:.1f} GiB; use fewer draws (the Monte Carlo error "
                           "falls as 1 / sqrt(draws): 10^5 draws give errors near 0.002)")


def results_per_dataset(scores: object) -> tuple[np.ndarray, ...]:
    """``q >= 2`` float64 ``(M, n_d)`` arrays of ``M >= 2`` systems: ``(M, q, n)`` results or a list of ``q``
    ``(M, n_d)`` arrays (:func:`as_fold_results` each), when the number of folds differs between data sets."""
    if isinstance(scores, (list, tuple)):
        if not scores:
            raise v.InputError("`scores` holds no data set")
        results = [as_fold_results(x, f"scores[{d}]", min_ndim=2) for d, x in enumerate(scores)]
        for d, x in enumerate(results):
            if x.ndim != 2 or x.shape[0] != results[0].shape[0]:
                raise v.InputError(f"`scores[{d}]` must be (M, n_d) with the M = {results[0].shape[0]} systems of "
                                   f"`scores[0]`, got shape {tuple(x.shape)}")
    else:
        x = as_fold_results(scores, "scores", min_ndim=2)
        one = " (one data set: use compare_results)" if x.ndim == 2 else ""
        v.check_shape(x, "scores", "(M, q, n)", why=f": M systems, q data sets, n folds each (or a list of q "
                      f"(M, n_d) arrays){one}")
        results = [x[:, d] for d in range(x.shape[1])]
    m, q = results[0].shape[0], len(results)
    if m < 2:
        raise v.InputError(f"`scores` must hold at least 2 systems, got {m}")
    check_several_datasets(q, "scores", "compare_results")
    return tuple(np.asarray(x) for x in results)
