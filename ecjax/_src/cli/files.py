"""Files of one run: the inputs read within the size limit, the library's checks said of the file that failed
them, and the outputs queued and written all at once at the end (all or none)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ecjax._src.inputs import as_index_array, canonical_scores, check_same_length, check_shape
from ecjax._src.io import DEFAULT_MAX_BYTES, said_of


class Run:
    """What one run of a command carries from step to step: the input size limit (``--max-input-mb``), its
    ``--force``, and the output files waiting to be written (:meth:`commit` writes them once everything has
    succeeded)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, force: bool = False) -> None:
        self.max_bytes, self.force = max_bytes, force
        self.pending: list[tuple[Path, bytes | str, str]] = []

    def load(self, path, rows=None):
        """One input array; ``rows``, the number of samples of the files it goes with, settles a CSV's first row
        that may be a header or a sample (:func:`ecjax.io.csv_first_row`)."""
        from ecjax._src.io import load_array

        return load_array(path, max_bytes=self.max_bytes, rows=rows)

    def load_same_samples(self, *paths):
        """The arrays of the files ``paths`` (``None`` for a file not given) that hold the same samples: each CSV's
        undecided first row is settled by the others (:func:`ecjax.io.load_arrays`)."""
        from ecjax._src.io import load_arrays

        given = [p for p in paths if p is not None]
        arrays = dict(zip(given, load_arrays(given, max_bytes=self.max_bytes)))
        return [None if p is None else arrays[p] for p in paths]

    def defer(self, path, data, option="--out"):
        """Queue an output file; :meth:`commit` writes the queue once everything has succeeded."""
        path = Path(path)
        check_output(path, self.force, option)
        self.pending.append((path, data, option))
        return str(path)

    def save_figure(self, fig, path):
        """Queue a figure as a PNG file (``--out``)."""
        import io

        import matplotlib.pyplot as plt

        check_output(path, self.force, "--out")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        return self.defer(path, buf.getvalue())

    def commit(self):
        """Write every queued output, all or none (:func:`ecjax.io.write_files_atomic`): a failed write leaves the
        folder as it was, an earlier run's files included (never some of them beside some of this run's)."""
        from ecjax._src.io import write_files_atomic

        for path, _, option in self.pending:
            check_output(path, self.force, option)
        write_files_atomic([(path, data) for path, data, _ in self.pending], force=self.force)
        self.pending.clear()


def check_of(path, check, *args, files=None, **kwargs):
    """``check(*args, **kwargs)``, one of the library's checks, with its error said of the file ``path`` and
    the arguments it names said as the files ``files`` (argument name -> file) that hold them."""
    with said_of(path, files):  # main() says the library's remaining arguments as options
        return check(*args, **kwargs)


def same_samples(path, a, what, other_path, other, other_what):
    """The library's sample-count check of two files that describe the same samples."""
    check_of(path, check_same_length, what, a, other_what, other, axis_a=0, axis_b=0,
             files={what: path, other_what: other_path})


def within(path, a, upper, name, upper_is):
    """The library's index check (:func:`~ecjax._src.inputs.as_index_array` with ``upper``), said of the file."""
    check_of(path, as_index_array, a, name, upper=upper, upper_is=upper_is)


def check_indices(a, path, what):
    """Class or decision indices of a file: integers in [0, 2**31), checked (by the library) before any cast."""
    within(path, a, None, what, "")
    return a.astype(np.int64)


def score_file(a, path, score_type):
    """A score file as one system's scores, ``(N,)`` (llr) or ``(N, K)`` (``(N,)`` class-1 probabilities become
    ``(N, 2)``: :func:`~ecjax._src.scores.inputs.one_system_scores`), said of the file; its values unchecked."""
    from ecjax._src.scores.inputs import one_system_scores

    return check_of(path, one_system_scores, a, score_type)  # the library takes batches of systems; a file holds one


def canonical_score_file(a, path, score_type):
    """The scores of a file (:func:`score_file`) made canonical by the library, once, said of the file: the
    :class:`ecjax.inputs.Scores` value that :class:`ecjax.prob.Systems` takes without checking it again."""
    return check_of(path, canonical_scores, a, "scores", score_type=score_type)


def check_labels(y, path):
    y = check_of(path, check_shape, y, "labels", "(N,)", why=" (a vector of class indices)")
    return check_indices(y, path, "labels")


def output_folder(args):
    """The --out folder, checked (not created: nothing is written before everything is validated)."""
    if args.out is None:
        return None
    d = Path(args.out)
    check_output(d / f"{args.command}.json", args.force, "--out")
    return d


def check_output(path, force, option):
    """Fail fast, before any work, on an output that exists or a folder that cannot be written."""
    from ecjax._src.io import check_output_path

    check_of(option, check_output_path, path, force=force)
