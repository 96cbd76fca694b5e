"""``--format table|json|csv|markdown`` at the command line (ecjax._src.formats).

References: the command's own JSON record (``--format json``), read independently: every CSV cell read back with
the :mod:`csv` module equals the record's number, and every markdown cell the number rounded to 6 significant
digits; the text table is the one printed without ``--format``.
"""

import csv
import io
import json
import math

import numpy as np
import pytest
from conftest import run_cli as run, run_to_run_rtol, same_across_runs

from ecjax._src import formats


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(0)
    n = 300
    y = rng.integers(0, 2, n)

    def logpost(llr):
        return np.stack([-np.logaddexp(0, llr), -np.logaddexp(0, -llr)], 1)

    np.save(d / "y.npy", y)
    np.save(d / "a.npy", logpost(2.0 * (y - 0.5) * 2 + rng.normal(size=n)))
    np.save(d / "b.npy", logpost(1.0 * (y - 0.5) * 2 + rng.normal(size=n)))
    (d / "c.toml").write_text('classes = ["neg", "pos"]\ncosts = [[0, 1], [4, 0]]\n')
    rows = [f"{0.8 + 0.01 * rng.normal():.4f},{0.78 + 0.01 * rng.normal():.4f}" for _ in range(10)]
    (d / "r.csv").write_text("A,B\n" + "\n".join(rows) + "\n")
    return d


def _outputs(d, *argv, every=False):
    """``{format: stdout}`` of one command run with --format json, csv and markdown; ``every``: also with --format
    table, without --format and with --json."""
    out = {}
    for fmt in (None, "table", "json", "csv", "markdown", "--json") if every else ("json", "csv", "markdown"):
        code, text, err = run(*argv, *([] if fmt is None else ["--json"] if fmt == "--json" else ["--format", fmt]),
                              cwd=d)
        assert code == 0, err
        out[fmt] = text
    return out


def _csv(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def _markdown(text):
    lines = text.strip().splitlines()
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    assert all(set(c) <= set(":-") for c in cells[1]), "the second line is the header rule"
    return cells[0], cells[2:]


def _json_number(x):
    return {"inf": math.inf, "-inf": -math.inf, None: math.nan}.get(x, x)


def _same_as_json(header, rows, expected, *, rel):
    """Each cell of the CSV/markdown ``rows`` is the number ``expected[row][column]`` (``rel``: its rounding)."""
    assert [r[0] for r in rows] == list(expected)
    for row in rows:
        for column, cell in zip(header[1:], row[1:]):
            want = _json_number(expected[row[0]][column])
            if math.isnan(want):
                assert cell == "nan"
            elif rel == 0:
                assert float(cell) == want, (row[0], column)
            else:
                assert float(cell) == pytest.approx(want, rel=rel, abs=1e-300), (row[0], column)


def _by_system(systems, **columns):
    """The expected rows: ``{system: {column: read(system)}}`` for the ``column=read`` given, in their order."""
    return {s: {column: read(s) for column, read in columns.items()} for s in systems}


def _check_all(out, expected, header):
    """CSV equals the JSON exactly, markdown to its 6 significant digits, both with ``header``; the text table is
    today's (the one printed without --format), and --json the JSON record."""
    if "table" in out:
        assert out["table"] == out[None]
        assert same_across_runs(json.loads(out["--json"]), json.loads(out["json"]))
    csv_header, csv_rows = _csv(out["csv"])
    md_header, md_rows = _markdown(out["markdown"])
    assert csv_header == md_header == header
    # Separate runs: exactly on a CPU, to float32 rounding on a GPU (conftest.run_to_run_rtol).
    _same_as_json(csv_header, csv_rows, expected, rel=run_to_run_rtol())
    _same_as_json(md_header, md_rows, expected, rel=0.5 * 10 ** (1 - formats.MARKDOWN_DIGITS))


def test_metrics_in_every_format(files):
    out = _outputs(files, "metrics", "--labels", "y.npy", "--scores", "a.npy", "b.npy", "--names", "A", "B",
                   every=True)
    rec = json.loads(out["json"])
    expected = {s: {m: v[s] for m, v in rec["metrics"].items()} for s in ("A", "B")}
    _check_all(out, expected, ["system", *expected["A"]])
    assert "XE" in expected["A"] and "Brier" in expected["A"]
    assert out["table"].splitlines()[0].split()[0] == "system" and "decisions:" in out["table"]


def _bootstrap_expected(rec):
    boot = rec["bootstrap"]
    return _by_system(rec["systems"], **{m: (lambda s, v=v: v[s]) for m, v in rec["metrics"].items()},
                      bootstrap_auc_estimate=lambda s: boot["estimate"][s], bootstrap_auc_mean=lambda s: boot["mean"][s],
                      bootstrap_auc_hdi_low=lambda s: boot["hdi"][s][0],
                      bootstrap_auc_hdi_high=lambda s: boot["hdi"][s][1],
                      bootstrap_auc_p_best=lambda s: boot["p_best"][s])


def _compare_expected(rec):
    err = rec["monte_carlo_errors"]
    return _by_system(rec["systems"], expected_yield=lambda s: rec["expected_yield"][s],
                      hdi_low=lambda s: rec["hdi"][s][0], hdi_high=lambda s: rec["hdi"][s][1],
                      p_best=lambda s: rec["p_best"][s], expected_yield_mc_error=lambda s: err["expected_yield"][s],
                      p_best_mc_error=lambda s: err["p_best"][s])


def _sweep_expected(rec):
    values = {s: np.asarray([_json_number(v) for v in rec["values"][s]], np.float64) for s in rec["systems"]}
    return _by_system(rec["systems"], win_fraction=lambda s: rec["win_fraction"][s],
                      nec_min=lambda s: float(values[s].min()), nec_max=lambda s: float(values[s].max()))


_SCORES = ("--labels", "y.npy", "--scores", "a.npy", "b.npy")


# ~10-25 s each on two loaded cores (the bootstrap's, compare's and sweep's programs compiled); the default lane
# has the metrics and compare-folds tables, built by the same formats.system_table (HDI columns included).
@pytest.mark.slow
@pytest.mark.parametrize("argv, expected_of", [
    (("metrics", *_SCORES, "--bootstrap", "auc", "--bootstrap-draws", "200"), _bootstrap_expected),
    (("compare", *_SCORES, "--costs", "c.toml", "--draws", "2000"), _compare_expected),
    (("sweep", *_SCORES, "--over", "cost-ratio", "--resolution", "21"), _sweep_expected),
], ids=["metrics-bootstrap", "compare", "sweep"])
def test_csv_and_markdown_of_bootstrap_compare_and_sweep(files, argv, expected_of):
    out = _outputs(files, *argv)
    expected = expected_of(json.loads(out["json"]))
    _check_all(out, expected, ["system", *expected["a"]])


def test_compare_folds_in_every_format(files):
    out = _outputs(files, "compare-folds", "r.csv", every=True)
    rec = json.loads(out["json"])
    expected = _by_system(("A", "B"), mean=lambda s: rec["mean"][s], p_best=lambda s: rec["p_best"][s],
                          hdi_low=lambda s: rec["hdi"][s][0], hdi_high=lambda s: rec["hdi"][s][1])
    _check_all(out, expected, ["system", *expected["A"]])


def test_calibrate_table_is_one_row_per_measure(files):
    from sklearn.metrics import brier_score_loss, log_loss

    code, out, err = run("calibrate", "--labels", "y.npy", "--scores", "a.npy", "--output", "cal.npy", "--force",
                         "--format", "csv", cwd=files)
    assert code == 0, err
    header, rows = _csv(out)
    assert header == ["measure", "before", "after", "loss", "refinement", "relative_loss_percent"]
    assert [r[0] for r in rows] == ["cross_entropy", "brier"]
    y, p = np.load(files / "y.npy"), np.exp(np.load(files / "a.npy"))
    before = {"cross_entropy": log_loss(y, p), "brier": brier_score_loss(y, p[:, 1])}  # data priors: plain means
    for name, *cells in rows:
        b, a, loss, refinement, percent = map(float, cells)
        assert b == pytest.approx(before[name], rel=1e-5) and refinement == a  # what calibration cannot remove
        assert loss == pytest.approx(b - a, rel=1e-5, abs=1e-7) and percent == pytest.approx(100 * loss / b, rel=1e-5)


@pytest.mark.parametrize("argv, said", [
    (["metrics", "--labels", "missing.npy", "--scores", "missing.npy", "--json", "--format", "csv"],
     "--json: not with --format table or --format csv or --format markdown"),
    (["compare-folds", "missing.csv", "--json", "--format", "markdown"], "--json: not with"),
    (["calibrate", "--scores", "missing.npy", "--train-scores", "t.npy", "--train-labels", "u.npy", "--output",
      "o.npy", "--format", "csv"], "--format csv: needs --labels"),
])
def test_format_option_rules_are_said_before_any_file_is_read(tmp_path, argv, said):
    code, _, err = run(*argv, cwd=tmp_path)
    assert code == 2 and said in err and "missing" not in err, err


def test_json_with_format_json_is_allowed():
    from ecjax import cli
    from ecjax._src.cli.output import output_format

    args = cli.build_parser().parse_args(["compare-folds", "r.csv", "--json", "--format", "json"])
    cli.check_option_rules(args)  # no error: the same request twice
    assert output_format(args) == "json"


def test_csv_and_markdown_cells_read_back():
    # Names with the separators of each format, and the numbers JSON cannot hold.
    table = formats.system_table(["a,b", 'say "x"', "p|q"], {
        "value": {"a,b": 0.1 + 0.2, 'say "x"': math.inf, "p|q": math.nan},
        "interval": {"a,b": [np.float32(0.25), -1.0], 'say "x"': [1, 2]},
        "count": {"a,b": 3, 'say "x"': np.int64(4), "p|q": 5}})
    header, rows = _csv(formats.csv_text(table))
    assert header == ["system", "value", "interval_low", "interval_high", "count"]
    assert [r[0] for r in rows] == ["a,b", 'say "x"', "p|q"]
    assert float(rows[0][1]) == 0.1 + 0.2 and float(rows[1][1]) == math.inf and math.isnan(float(rows[2][1]))
    assert rows[0][2:4] == ["0.25", "-1.0"] and rows[2][2:4] == ["", ""]  # an absent interval: empty cells
    assert [int(r[4]) for r in rows] == [3, 4, 5]
    md = formats.markdown_text(table).splitlines()
    assert md[4].startswith("| p\\|q | nan |")  # the pipe escaped: still 5 cells
    assert len(md[4].replace("\\|", "").strip("|").split("|")) == 5
    assert md[2].split("|")[2].strip() == "0.3"  # 6 significant digits


def test_records_of_two_runs_are_compared_exactly_on_a_cpu():
    # The helper the run-to-run tests above use: exact on a CPU, 8 float32 ulps on a GPU (the H100's ECEs of two runs,
    # 0.14928104 and 0.14928105, agree there), never looser for structure and strings.
    import jax

    a, b = {"ECE": [0.14928104, "x"]}, {"ECE": [0.14928105, "x"]}
    assert same_across_runs(a, a, rtol=0.0) and not same_across_runs(a, b, rtol=0.0)
    assert same_across_runs(a, b, rtol=2.0**-20)
    assert not same_across_runs({"ECE": [0.1492]}, {"ECE": [0.1493]}, rtol=2.0**-20)
    assert not same_across_runs(a, {"ECE": [0.14928104, "y"]}, rtol=2.0**-20)
    assert not same_across_runs(a, {"XE": [0.14928104, "x"]}, rtol=2.0**-20)
    assert run_to_run_rtol() == (0.0 if jax.default_backend() == "cpu" else 2.0**-20)
