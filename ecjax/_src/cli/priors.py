"""The class priors of a command: the deployment priors' checks against the test data, the training priors of
posterior-type scores, and the deployment priors estimated from unlabelled scores (label shift)."""

from __future__ import annotations

import numpy as np

from ecjax._src import random_bits
from ecjax._src.cli.files import canonical_score_file, check_of, score_file
from ecjax._src.cli.rules import or_default
from ecjax._src.inputs import (POSTERIOR_TYPES, InputError, as_positive_priors, check_classes_present, check_exclusive,
                               check_naive_cost_positive, check_posterior_type, check_priors_cover, check_shape)
from ecjax._src.scores.inputs import class_frequencies, priors_or_frequencies

# Bayesian-bootstrap draws of the deployment priors of compare --deployment-scores (each refits a calibrator).
DEPLOYMENT_PRIOR_DRAWS = 1000


def check_test_covers_priors(spec, labels, label_file, costs_arg, sample_weight=None):
    """Deployment priors may not weigh a class that has no test samples (its rates are unknown)."""
    if spec.priors is None:
        return
    n_i = np.bincount(labels, weights=sample_weight, minlength=len(spec.priors))[: len(spec.priors)]
    check_of(f"{label_file} with the priors of {costs_arg}", check_priors_cover, n_i, spec.priors,
             weighted=sample_weight is not None, class_names=spec.classes)


def check_naive(costs, priors, labels, label_file, costs_arg, sample_weight=None):
    """The library's NEC check (the best naive decision must cost something: Ferrer (2022a) eq. 4) for the costs
    ``costs`` and the deployment ``priors`` (else the data's), said of the file that makes it fail: the labels
    when, with the data's priors, they hold one class (deciding it is free), else the cost specification."""
    p = priors_or_frequencies(priors, labels, costs.shape[0], sample_weight)
    present = np.unique(labels if sample_weight is None else labels[sample_weight > 0])
    one_class = priors is None and len(present) == 1 and np.any(costs)
    culprit = (f"{label_file} (every label is class {present[0]}: give deployment priors in --costs)" if one_class
               else costs_arg or "0-1 costs")
    check_of(culprit, check_naive_cost_positive, np.matmul(p, costs))  # numpy, float64


def training_priors(args, spec, labels, label_files, num_classes, weights):
    """Per system: the priors posterior-type scores were trained with (to re-weight them to the deployment
    priors of the cost specification), or ``None`` where nothing is re-weighted."""
    choice = args.training_priors.strip()
    none = [None] * len(labels)
    posterior_type = args.scores is not None and args.score_type in POSTERIOR_TYPES
    deployment = spec.priors is not None or spec.priors_low is not None
    if choice == "data" and (not posterior_type or not deployment):
        return none  # the default: nothing to re-weight
    if args.scores is None:  # decisions: nothing to re-weight
        raise InputError("--training-priors: needs --scores (posteriors to re-weight)")
    check_of("--training-priors", check_posterior_type, args.score_type, "training_priors")
    if not deployment:
        raise InputError(f"--training-priors: {args.costs or 'the 0-1 costs'} gives no deployment priors to "
                         "re-weight the posteriors to")
    if choice == "none":
        return none
    if choice == "data":
        for y, lf, w in zip(labels, label_files, weights):
            check_of("--training-priors data", check_classes_present, y, w, num_classes, files={"labels": lf},
                     why="its frequency is no training prior to re-weight by: give the training priors as numbers")
        return [class_frequencies(y, num_classes, w) for y, w in zip(labels, weights)]
    try:
        values = np.array([float(x) for x in choice.split(",")])
    except ValueError:
        raise InputError(f"--training-priors: 'data', 'none' or {num_classes} comma-separated numbers, got {choice!r}") from None
    check_of("--training-priors", as_positive_priors, values, "training_priors", num_classes=num_classes)
    return [values] * len(labels)


def decisions_made_by(kind, score_type, spec, training, choice):
    if kind != "scores":
        return "given"
    text = "Bayes decisions for the nominal costs"
    if spec.priors is None:
        return text + " and the test data's class frequencies"
    if score_type not in POSTERIOR_TYPES:
        return text + " and the deployment priors"
    if training[0] is None:
        return text + "; posteriors used as given (--training-priors none: not re-weighted to the deployment priors)"
    source = "each system's label frequencies" if choice.strip() == "data" else "--training-priors"
    return text + f" and the deployment priors (posteriors re-weighted from the training priors of {source})"


def deployment_priors(args, run, spec, labels, scores, names):
    """--deployment-scores FILE: the posterior of the deployment priors (ecjax.prob.label_shift_posterior) from the
    first system's unlabelled deployment scores, its labelled test scores (``scores``, canonical:
    :class:`ecjax.inputs.Scores`) calibrating them; with the cost specification holding the estimate as its
    priors.  ``(spec, posterior, record, text)``."""
    from dataclasses import replace

    from ecjax._src import prob

    path = args.deployment_scores
    check_exclusive({f"priors in {args.costs}": spec.priors if spec.priors_low is None else spec.priors_low,
                     "--deployment-scores": path}, required=False)
    (deployment,) = run.load_same_samples(path)
    # Made canonical once, here, said of the file: the library takes both Scores values without checking them again.
    deployment = canonical_score_file(score_file(deployment, path, args.score_type), path, args.score_type)
    check_of(path, check_shape, deployment.values, "scores", "(N, K)", sizes={"K": scores.num_classes},
             why=" (the classes of --scores)")
    post = check_of(path, prob.label_shift_posterior, labels, scores, deployment,
                    key=random_bits.key(or_default(args.seed, 0)),
                    num_draws=DEPLOYMENT_PRIOR_DRAWS, score_type=args.score_type)
    estimate = np.asarray(post.priors, np.float64)
    interval = post.interval(0.9)
    record = {"file": path, "system": names[0], "method": "EM on affine-calibrated posteriors (Saerens et al. 2002, "
              "Alexandari et al. 2020); Bayesian bootstrap of both sets", "estimate": estimate.tolist(),
              "interval_90": interval.tolist(), "training_priors": np.asarray(post.training_priors).tolist(),
              "draws": DEPLOYMENT_PRIOR_DRAWS, "converged": post.converged}
    text = (f"\ndeployment priors estimated from {path} ({names[0]}'s scores; 90 % intervals): " + ", ".join(
        f"{c} {e:.3f} [{lo:.3f}, {hi:.3f}]" for c, e, (lo, hi) in zip(spec.classes, estimate, interval)))
    return replace(spec, priors=estimate / estimate.sum()), post, record, text
