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
          "regression", "regression_fit", "pgi", "learning", "replay_learning",
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


def _table_list(text: str) -> list[str]:
    values = _comma_list(text)
    unknown = [value for value in values if value not in TABLES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown table {unknown[0]!r}; allowed: {', '.join(TABLES)}")
    return values


def _add_pool_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", nargs="+", metavar="DATASET",
                        help="a sweep directory (collective sweep --out DIR) or its dataset/ folder; several are "
                             "analysed together when their profile and settings agree (else see --pool)")
    parser.add_argument("--pool", action="store_true",
                        help="analyse datasets together even when their profile or settings differ (e.g. sweeps "
                             "that differ in training passes, for the learning tables)")


def _add_dataset_options(parser: argparse.ArgumentParser) -> None:
    _add_pool_option(parser)
    parser.add_argument("--by", type=_comma_list, default=None, metavar="F1,F2",
                        help="factors of the Υ table: any column, or k (K binned), H (entropy_bits), G "
                             "(group_size); default group,grid,group_size; grid is always added (paper 003 "
                             "Definition 3: one H per Υ). Paired comparisons are made within the levels of the "
                             "factors that are not group types")
    parser.add_argument("--k-bin-width", type=_bin_width, default=4, metavar="W",
                        help="width of the K bins, in LZ76 phrases (default 4: 1-4, 5-8, ...)")


def add_analysis_commands(commands) -> None:
    """Add analyze, figures, dashboard and validate to the CLI's subparsers."""
    analyze = commands.add_parser("analyze", help="Υ tables with CIs, collective gains, protocol tests, "
                                                  "regression, PGI index",
                                  description="Tables from a sweep dataset: Υ with 95% CIs by any factor, "
                                              "a 2^-K-weighted Υ with its effective sample size, the gain of "
                                              "collectives over isolated agents and protocol comparisons "
                                              "(paired by environment), communication cost, information and "
                                              "the sham control, focal and background "
                                              "scores of mixed groups, a regression of Υ on K, H, group "
                                              "size and density (errors clustered by cell, lack-of-fit test of "
                                              "linear H), the PGI index, the held-out learning slope and "
                                              "replay curves.")
    _add_dataset_options(analyze)
    analyze.add_argument("--format", choices=FORMATS, default="table",
                         help="output format (default table: aligned text, on a terminal in panels of columns "
                              "that fit its width; wide: never split; csv, json, markdown: every column)")
    analyze.add_argument("--tables", type=_table_list, default=None, metavar="T1,T2",
                         help=f"only these tables: {', '.join(TABLES)} (default all)")
    figures = commands.add_parser("figures", help="publication figures (PDF and PNG) of a sweep dataset",
                                  description="Υ against K, H and group size, K x group-size heat maps and "
                                              "organisational structures side by side, as PDF and PNG.")
    _add_dataset_options(figures)
    figures.add_argument("--out", required=True, metavar="DIR", help="directory for the figure files")
    validate = commands.add_parser("validate", help="the validity suite: negative controls and known answers",
                                   description="Checks a dataset's readings must pass, each reported as holding or "
                                               "not with its figure: no group-size effect for groups that cannot "
                                               "interact, random at 0, the oracle at its ceiling, nobody above "
                                               "it, a sham that keeps its own sensing; and the K effect of still "
                                               "and moving patterns apart. Exit status 1 when a check fails.")
    _add_pool_option(validate)
    validate.add_argument("--format", choices=("table", "csv", "json"), default="table",
                          help="output format (default table)")
    dashboard = commands.add_parser("dashboard", help="one self-contained HTML report of a sweep dataset",
                                    description="One HTML file that needs no network: the headline results "
                                                "with CIs, interactive figures, sortable and filterable tables "
                                                "(every table of analyze), the paper figures, provenance and "
                                                "data size (docs/dashboard.md).")
    _add_dataset_options(dashboard)
    dashboard.add_argument("--out", required=True, metavar="FILE.html", help="the report to write")


def _validate(dataset, fmt: str) -> int:
    """Print the validity report; 1 when a check fails."""
    from collective.analysis.validity import FAILS, format_report, validate

    report = validate(dataset.rows)
    print(format_report(report) if fmt == "table" else report.to_csv(index=False) if fmt == "csv"
          else report.to_json(orient="records", force_ascii=False, indent=1))
    return 1 if (report["status"] == FAILS).any() else 0


def run_analysis_command(args: argparse.Namespace) -> int:
    """Run analyze, figures, dashboard or validate; a DatasetError becomes one line and status 2."""
    from collective.analysis.tables import DEFAULT_BY, DatasetError, analyse, format_analysis, load_dataset

    try:
        dataset = load_dataset(args.dataset, pool=args.pool)
        for notice in dataset.notices:
            print(f"collective {args.command}: notice: {notice}", file=sys.stderr)
        if args.command == "validate":
            return _validate(dataset, args.format)
        analysis = analyse(dataset, args.by or list(DEFAULT_BY), args.k_bin_width)
        if args.command == "analyze":
            if args.tables:
                analysis.tables = {name: table for name, table in analysis.tables.items() if name in args.tables}
                analysis.skipped = {name: why for name, why in analysis.skipped.items() if name in args.tables}
            width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None  # a file gets it whole
            print(format_analysis(analysis, args.format, width))
        elif args.command == "figures":
            from dashboards.figures import write_figures

            for written in write_figures(dataset, args.out, args.k_bin_width):
                print(f"{written.pdf}\n{written.png}")
        else:
            from dashboards.report import write_report

            print(write_report(dataset, analysis, args.out, args.k_bin_width))
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
