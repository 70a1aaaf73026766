"""`collective analyze`, `figures`, `dashboard` and `validate`: their options, and runners that import the heavy
modules (pandas, statsmodels, matplotlib) only when the command runs.

Bad input (a directory that is not a dataset, an unknown factor) exits with status 2 and one line.
"""
from __future__ import annotations

import argparse
import shutil
import sys

COMMANDS = ("analyze", "figures", "dashboard", "validate")
FORMATS = ("table", "wide", "csv", "json", "markdown")
MAX_K_BIN_WIDTH = 10**6  # K is at most T + 1 phrases; wider bins are one bin
TABLES = ("accuracy", "upsilon", "legg_hutter", "gains", "protocols", "communication", "communication_entropy", "sham", "focal",
          "regression", "regression_fit", "claims_2016", "pgi", "learning", "replay_learning",
          "learning_curves", "sample_efficiency", "sharing", "validity")


def _comma_list(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list (got {text!r})")
    return values


def _bin_width(text: str) -> int:
    """A K bin width: a whole number of LZ76 phrases, 1..MAX_K_BIN_WIDTH."""
    if not text.strip().isascii() or not text.strip().isdigit() or not 1 <= int(text) <= MAX_K_BIN_WIDTH:
        raise argparse.ArgumentTypeError(f"expected a whole number 1..{MAX_K_BIN_WIDTH:,} (got {text!r})")
    return int(text)


def _known_names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    """The comma-separated names of `text`, each one of `allowed` (else the error names it and the allowed ones)."""
    values = _comma_list(text)
    unknown = [value for value in values if value not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {what} {unknown[0]!r}; allowed: {', '.join(allowed)}")
    return values


def _table_list(text: str) -> list[str]:
    return _known_names(text, TABLES, "table")


def _width(text: str) -> float:
    from collective.dashboards.figures import parse_width

    try:
        return parse_width(text.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _figure_list(text: str) -> list[str]:
    from collective.dashboards.figures import FIGURE_NAMES

    return _known_names(text, FIGURE_NAMES, "figure")


def _display_label(text: str) -> tuple[str, str]:
    """GROUP=TEXT: a group identifier and its display label, both non-empty."""
    group, _, label = text.partition("=")
    if not group.strip() or not label.strip():
        raise argparse.ArgumentTypeError(f"expected GROUP=TEXT, e.g. local_search+broadcast=\"broadcast\" (got {text!r})")
    return group.strip(), label.strip()


def _add_pool_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", nargs="+", metavar="DATASET",
                        help="a sweep directory (collective sweep --out DIR) or its dataset/ folder; several are "
                             "analysed together when their profile and settings agree (else see --pool)")
    parser.add_argument("--pool", action="store_true",
                        help="analyse datasets together even when their profile or settings differ (e.g. sweeps "
                             "that differ in training passes, for the learning tables)")


def _add_label_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--label", type=_display_label, action="append", default=[], metavar="GROUP=TEXT",
                        help="show group GROUP (its identifier, as in --format json) as TEXT; repeatable; over the "
                             "spec's labels (json and csv keep the identifiers, with the labels beside them)")


def _add_dataset_options(parser: argparse.ArgumentParser) -> None:
    _add_pool_option(parser)
    _add_label_option(parser)
    parser.add_argument("--by", type=_comma_list, default=None, metavar="F1,F2",
                        help="factors of the Υ table: any column, or k (K binned), H (entropy_bits), G "
                             "(group_size); default group,grid,group_size; grid is always added (paper 003 "
                             "Definition 3: one H per Υ). Paired comparisons are made within the levels of the "
                             "factors that are not group types")
    parser.add_argument("--k-bin-width", type=_bin_width, default=4, metavar="W",
                        help="width of the K bins, in LZ76 phrases (default 4: 1-4, 5-8, ...)")


STILL_TREATMENTS = ("indicator", "excluded", "kept")  # regression.STILL_TREATMENTS, the default first; not imported:
# --help reads no analysis module (tests/test_analysis.py checks the two agree)


def _add_still_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--still", choices=STILL_TREATMENTS, default=STILL_TREATMENTS[0],
                        help="how the regression treats still episodes (⊕ does not move, K at its minimum): "
                             "indicator, their own intercept and G slope per grid, so K and K x G are those of moving "
                             "episodes (default); excluded, left out (counted in the fit table); kept, K fitted "
                             "through them")


def add_analysis_commands(commands) -> None:
    """Add analyze, figures, dashboard and validate to the CLI's subparsers."""
    analyze = commands.add_parser("analyze", help="Υ tables with CIs, collective gains, protocol tests, "
                                                  "regression, PGI index",
                                  description="Tables from a sweep dataset: Υ with 95% CIs by any factor, "
                                              "a 2^-K-weighted Υ with its effective sample size, the gain of "
                                              "collectives over isolated agents and protocol comparisons "
                                              "(paired by environment), communication cost, information and "
                                              "the sham control, focal and background "
                                              "scores of mixed groups, a regression of Υ on K, still "
                                              "episodes and group size per grid (errors clustered by cell, "
                                              "lack-of-fit test of linear H), the PGI index, the held-out learning slope and "
                                              "replay curves.")
    _add_dataset_options(analyze)
    _add_still_option(analyze)
    analyze.add_argument("--format", choices=FORMATS, default="table",
                         help="output format (default table: aligned text, on a terminal in panels of columns "
                              "that fit its width; wide: never split; csv, json, markdown: every column)")
    analyze.add_argument("--tables", type=_table_list, default=None, metavar="T1,T2",
                         help=f"only these tables: {', '.join(TABLES)} (default all)")
    figures = commands.add_parser("figures", help="publication figures (PDF, PNG and SVG) of a sweep dataset",
                                  description="Υ against K, H and group size, K x group-size heat maps, "
                                              "organisational structures side by side, the gains of collectives "
                                              "over isolated agents and Υ against message entropy, one panel per "
                                              "grid, as PDF, PNG and SVG sized for a paper (collective docs figures).")
    _add_dataset_options(figures)
    figures.add_argument("--out", required=True, metavar="DIR", help="directory for the figure files")
    figures.add_argument("--width", type=_width, default="double", metavar="single|double|INCHES",
                         help="figure width: single (3.5 in, one column), double (7.16 in, two columns; default) "
                              "or inches; every text is at least 7 pt at this width")
    figures.add_argument("--title", action="store_true", help="draw a title on each figure (default none: a "
                                                              "paper puts it in the caption)")
    figures.add_argument("--groups", type=_comma_list, default=None, metavar="G1,G2",
                         help="only these groups (identifiers); random and oracle stay as references")
    figures.add_argument("--figures", type=_figure_list, default=None, metavar="F1,F2",
                         help="only these figures: upsilon_vs_k, upsilon_vs_entropy, upsilon_vs_group_size, "
                              "heatmap_k_group_size, structures, gains, learning_curves, "
                              "upsilon_vs_message_entropy, training_curves (default all)")
    validate = commands.add_parser("validate", help="the validity suite: negative controls and known answers",
                                   description="Checks a dataset's readings must pass, each reported as holding or "
                                               "not with its figure: no group-size effect for groups that cannot "
                                               "interact, random at 0, the oracle at its ceiling, nobody above "
                                               "it, a sham that keeps its own sensing; and the K effect of still "
                                               "and moving patterns apart. Exit status 1 when a check fails.")
    _add_pool_option(validate)
    _add_label_option(validate)
    validate.add_argument("--format", choices=("table", "csv", "json"), default="table",
                          help="output format (default table)")
    dashboard = commands.add_parser("dashboard", help="one self-contained HTML report of a sweep dataset",
                                    description="One HTML file that needs no network: the headline results "
                                                "with CIs, interactive figures, sortable and filterable tables "
                                                "(every table of analyze), the paper figures, provenance and "
                                                "data size (collective docs dashboard).")
    _add_dataset_options(dashboard)
    _add_still_option(dashboard)
    dashboard.add_argument("--out", required=True, metavar="FILE.html", help="the report to write")


def _validate(dataset, fmt: str, labels: dict[str, str]) -> int:
    """Print the validity report, groups by their display labels (the spec's, then `labels`) in the table; 1 when a
    check fails."""
    from collective.analysis.dataset import display_labels
    from collective.analysis.validity import FAILS, format_report, validate
    from collective.output_files import write_stdout

    report = validate(dataset.rows, sweeps=dataset.descriptions)
    write_stdout(format_report(report, display_labels(dataset, labels)) if fmt == "table" else report.to_csv(index=False) if fmt == "csv"
                 else report.to_json(orient="records", force_ascii=False, indent=1))
    return 1 if (report["status"] == FAILS).any() else 0


def _figures(dataset, args: argparse.Namespace) -> int:
    """Write the figures (no tables: the figures compute what they show) and print their paths; a notice when
    they show only some of the groups."""
    from collective.analysis.factors import add_k_bins, resolve_factors
    from collective.dashboards.figures import FigureOptions, check_options, limit_groups, write_figures
    from collective.output_files import write_stdout

    resolve_factors(add_k_bins(dataset.rows, args.k_bin_width), args.by or [], dataset.columns)  # refuses a bad --by
    options = FigureOptions(width=args.width, title=args.title, labels=dict(args.label),
                            groups=tuple(args.groups) if args.groups else None,
                            figures=tuple(args.figures) if args.figures else None)
    check_options(dataset, options)
    options, notice = limit_groups(dataset, options)
    if notice:
        print(f"collective figures: notice: {notice}", file=sys.stderr)
    for written in write_figures(dataset, args.out, args.k_bin_width, options):
        write_stdout(f"{written.pdf}\n{written.png}\n{written.svg}")
    return 0


def _release_freed_memory() -> None:
    """Arrow's jemalloc pool where the installed pyarrow has it: it returns freed pages to the system, where the
    default (mimalloc) kept about the rows' size again after reading a dataset's chunk files (notes/analysis-and-cli.md)."""
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
        pa.jemalloc_set_decay_ms(0)  # at once, not after a decay delay while the next chunk file is read
    except NotImplementedError:
        pass


def run_analysis_command(args: argparse.Namespace) -> int:
    """Run analyze, figures, dashboard or validate; a DatasetError becomes one line and status 2."""
    from collective.analysis.base import DatasetError
    from collective.analysis.dataset import load_dataset
    from collective.analysis.factors import DEFAULT_BY
    from collective.analysis.report import analyse, format_analysis
    from collective.output_files import write_stdout

    _release_freed_memory()
    try:
        dataset = load_dataset(args.dataset, pool=args.pool, factors=getattr(args, "by", None) or [])
        for notice in dataset.notices:
            print(f"collective {args.command}: notice: {notice}", file=sys.stderr)
        if args.command == "validate":
            return _validate(dataset, args.format, dict(args.label))
        if args.command == "figures":
            return _figures(dataset, args)
        analysis = analyse(dataset, args.by or list(DEFAULT_BY), args.k_bin_width, dict(args.label), args.still,
                           getattr(args, "tables", None) or None)  # `analyze --tables`: those alone are computed
        if args.command == "analyze":
            width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None  # a file gets it whole
            write_stdout(format_analysis(analysis, args.format, width))
        else:
            from collective.dashboards.report import write_report

            write_stdout(str(write_report(dataset, analysis, args.out, args.k_bin_width)))
    except DatasetError as error:
        print(f"collective {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # the reader of stdout left (`| head`): `collective.cli.main` ends quietly
    except OSError as error:
        print(f"collective {args.command}: error: {error.filename}: {error.strerror}",
              file=sys.stderr)
        return 2
    return 0
