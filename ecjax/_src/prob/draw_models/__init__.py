"""The draw models of :func:`~ecjax.prob.compare`, one module per model behind one protocol
(:mod:`~ecjax._src.prob.draw_models.protocol`: ``prepare -> state``,
``draw(key, state, utilities, priors) -> weights``).

* :mod:`~ecjax._src.prob.draw_models.outputs`: yield, EC and NEC draws, the doubt components' yields, tie labels.
* :mod:`~ecjax._src.prob.draw_models.fixed_decisions`: the Bayes decisions of scores made once, and their counts.
* :mod:`~ecjax._src.prob.draw_models.unpaired`: independent Dirichlet rates per system and class.
* :mod:`~ecjax._src.prob.draw_models.joint`: paired systems, a Dirichlet over the joint outcome cells.
* :mod:`~ecjax._src.prob.draw_models.clustered`: the cluster Bayesian bootstrap.
* :mod:`~ecjax._src.prob.draw_models.merged`: the cells of equal utility merged (fixed utilities, structured costs).
* :mod:`~ecjax._src.prob.draw_models.occupied`: fixed counts drawn over their occupied cells only.
* :mod:`~ecjax._src.prob.draw_models.per_draw`: each draw makes the Bayes decisions of its own utilities.
* :mod:`~ecjax._src.prob.draw_models.expectations`: the fixed point (``U_hat``, ``E[P]``) and the closed-form expected
  yield.
* :mod:`~ecjax._src.prob.draw_models.blocks`: the draw loop, one block of any model at a time.
"""
