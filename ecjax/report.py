"""Tables of metrics for several systems, and where the popular metrics disagree."""

from ecjax._src.report import metric_columns, score_columns

__all__ = ["metric_columns", "score_columns"]
