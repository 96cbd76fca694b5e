"""Inputs: the checks and canonical forms every public function of ecjax starts from."""

from ecjax._src.inputs import InputError, Scores, canonical_scores, class_indices, stack_scores

__all__ = ["InputError", "class_indices", "Scores", "canonical_scores", "stack_scores"]
