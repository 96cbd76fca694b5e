"""Counts: confusion matrices, rates and joint (paired) outcome tables."""

from ecjax._src.confusion import (
    JointOutcomeTable,
    confusion_matrix,
    data_priors,
    joint_outcome_table,
    rates,
    sparse_confusion_matrix,
)

__all__ = [
    "JointOutcomeTable",
    "confusion_matrix",
    "data_priors",
    "joint_outcome_table",
    "rates",
    "sparse_confusion_matrix",
]
