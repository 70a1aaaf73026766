"""The validity suite (issue 22): negative controls and known answers a dataset's readings must pass before a
reviewer accepts them, each reported as holding or not with its figure (`collective validate RUN_DIR...`).

- isolated_group_size: groups that cannot interact (protocol none, coordination_threshold 1) show no effect
  of group size within grids: G (and density G/N where the design separates it) of `regression` with pooled
  slopes (one G over the grids, each grid its intercept: the null, no effect, holds in every grid, and one slope
  tests it on every cell where a slope per grid has a grid's few cells; the report's regression is per grid), over the group's range of the term not shown beyond ±ISOLATED_MARGIN (a minimum-effect test, Murphy
  & Myors 1999) after Holm's correction over the suite's G and D tests (Holm 1979).
- random_zero: the random agent scores 0 in expectation (spec: balance; paper 003 §4): per grid, |Υ| not shown
  beyond RANDOM_TOLERANCE (a minimum-effect test on environments, Holm over grids).
- oracle_ceiling: the oracle plays about as well as the episode allows: per grid, its accuracy against the
  ceiling (upsilon.ACCURACY_NOTE) is at least ORACLE_ACCURACY.
- below_ceiling: no episode's R̄ exceeds its ceiling upsilon_best (an upper bound by construction).
- sham_not_above_real: a sham control replaces what the others tell a listener by what they said in another
  episode and keeps everything else (its own sensing and its own part in the protocol), so the real protocol
  is not beaten by its sham: the upper end of real - sham's 95% CI is >= 0 (else the messages mislead). The
  sham is shown beside isolated agents: a sham far below them means the protocol's rule trusts the others'
  reports over the listener's own window (they lead it away), which is the protocol's property, not a defect.
- sham_mechanism: that the sham is built so (issue 45 item 4), decided exactly by re-playing a few episodes of each
  sham on the sweep's own config: with each episode as its own shadow it plays as the real protocol; a listener
  plays alike when the others start elsewhere in its episode (no leak of the real messages); its play changes
  when ⊕ and ⊖ trade places in its own episode (no blindfold).
- k_by_motion (a report, not a check): Υ for stationary, periodic and drifting episodes (the rows' `motion`,
  read off ⊕'s and ⊖'s played paths: `collective.environments.motion`), with the K slope within each kind.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.base import environment_ids, grid_area, is_reference, labelled, levels, reference_keys
from collective.analysis.cluster_robust import clustered_ols
from collective.analysis.communication import CONTROL, sham_table
from collective.analysis.inference import CONFIDENCE, ceiling_accuracy, mean_ci
from collective.analysis.regression import regression
from collective.environments.motion import MOTION_KINDS

RANDOM_TOLERANCE = 0.01  # |Υ_random| below this is 0 for every purpose (R̄ lies in [-1, 1])
# Υ: a group-size effect of isolated agents over the design's range of G (or D) below this is 0 for every purpose,
# as RANDOM_TOLERANCE; the equivalence margin of isolated_group_size's minimum-effect test (issue 46 item 5)
ISOLATED_MARGIN = 0.01
ORACLE_ACCURACY = 0.95  # the oracle's accuracy against the ceiling at least this
CEILING_SLACK = 1e-9  # rounding allowed above the ceiling
MECHANISM_EPISODES = 8  # episodes each sham is re-played on by sham_mechanism (well under a second each)
HOLDS, FAILS, REPORT, NOT_APPLICABLE = "holds", "FAILS", "report", "n/a"
COLUMNS = ["check", "subject", "status", "figure", "criterion"]
VALIDITY_NOTE = (
    "Each check holds or FAILS with its figure (collective/analysis/validity.py; `collective validate`): "
    "isolated_group_size, groups that cannot interact show no G or G/N effect within grids beyond ±0.01 in Υ over "
    "the group's range of the term (regression with one slope over the grids, each grid its intercept; a "
    "minimum-effect test, Holm over the tests); random_zero, random's |Υ| not shown beyond 0.01 (the same test on environments, Holm over grids); "
    "oracle_ceiling, the oracle's accuracy against the ceiling >= 0.95; below_ceiling, no episode above its "
    "ceiling; sham_not_above_real, the real protocol is not beaten by its sham (real - sham's CI reaches 0 or "
    "above); sham_mechanism, each sham re-played on the sweep's config: with its own episode as shadow it plays "
    "exactly as the real protocol, a listener plays alike when the others start elsewhere, and its play changes when "
    "⊕ and ⊖ trade places in its own episode; k_by_motion "
    "(a report), Υ and the K slope of stationary, periodic and drifting episodes (the rows' motion column).")


@dataclass(frozen=True)
class Check:
    """One check on one subject (a group type, a grid): its status and the figure it rests on."""

    check: str
    subject: str
    status: str
    figure: str
    criterion: str


def _ci(estimate: float, low: float, high: float) -> str:
    return f"{estimate:+.4f} [{low:+.4f}, {high:+.4f}]"


def _spans(rows: pd.DataFrame, isolated: np.ndarray) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (group, term), the range (low, high) of G and of density D = G/N over the group's isolated rows."""
    part = rows.loc[isolated, ["group", "grid", "group_size"]].drop_duplicates()
    part = part.assign(G=part["group_size"].astype(float),
                       D=part["group_size"].astype(float) / grid_area(part["grid"].astype(str)))
    return {(str(group), term): (float(values[term].min()), float(values[term].max()))
            for group, values in part.groupby("group", observed=True) for term in ("G", "D")}


def isolated_group_size(rows: pd.DataFrame) -> list[Check]:
    """G and D of the pooled regression (each grid its intercept) for each group type that cannot interact, fitted
    on its isolated rows: a minimum-effect test
    (Murphy & Myors 1999), whether the effect over the group's range of the term, |β| (high - low), exceeds
    ISOLATED_MARGIN. A point null (β = 0) fails at large n for any effect the regression resolves however small, and
    for copies of a dataset's episodes (a load test's grown rows, counted as new environments); against the margin,
    t = (|β| - margin / range) / se on the term's df, one-sided; Holm over the tests (Holm 1979)."""
    isolated = ((rows["protocol"] == "none")
                & ((rows["coordination_threshold"] == 1) if "coordination_threshold" in rows else True)).to_numpy()
    sizes = rows.loc[isolated, ["group", "grid", "group_size"]].groupby(["group", "grid"])["group_size"].nunique() \
        .groupby("group").max()
    isolated = isolated & rows["group"].isin(sizes.index[sizes > 1]).to_numpy()  # marks rows, copies none
    criterion = (f"no effect of group size within grids beyond ±{ISOLATED_MARGIN} in Υ over the group's range of G "
                 "(or of D): Holm-corrected p >= 0.05 over the table's G and D tests of |effect| > the margin")
    if not isolated.any():
        return [Check("isolated_group_size", "(dataset)", NOT_APPLICABLE, "no isolated group with 2+ sizes in a grid",
                      criterion)]
    from statsmodels.stats.multitest import multipletests

    terms = regression(rows, isolated, slopes="pooled")[0].query("term in ['G', 'D']").reset_index(drop=True)
    spans = _spans(rows, isolated)
    ranges = np.array([np.subtract(*spans[(str(g), t)][::-1]) for g, t in zip(terms["group"], terms["term"])], float)
    beyond = (terms["estimate"].abs().to_numpy() - ISOLATED_MARGIN / ranges) / terms["std_error"].to_numpy()
    terms["p_margin"] = stats.t.sf(beyond, terms["df"].to_numpy())
    tested = terms["p_value"].notna()
    terms["holm"] = math.nan
    if tested.any():
        terms.loc[tested, "holm"] = multipletests(terms.loc[tested, "p_margin"], method="holm")[1]
    checks = []
    for record, span in zip(terms.itertuples(index=False), ranges):
        subject = f"{record.group}: {record.term}"
        if math.isnan(record.p_value):
            checks.append(Check("isolated_group_size", subject, NOT_APPLICABLE,
                                f"{record.term} = {record.estimate:+.4g}, no error left (cells too few)", criterion))
            continue
        unit = "agent" if record.term == "G" else "unit of density G/N"
        low, high = spans[(str(record.group), record.term)]
        checks.append(Check("isolated_group_size", subject, HOLDS if record.holm >= 1 - CONFIDENCE else FAILS,
                            f"{record.term} = {_ci(record.estimate, record.ci95_low, record.ci95_high)} per {unit}, "
                            f"over {record.term} {low:.4g}-{high:.4g} {record.estimate * span:+.4f}: p(beyond "
                            f"±{ISOLATED_MARGIN}) = {record.p_margin:.3g}, Holm p = {record.holm:.3g}; p(≠ 0) = "
                            f"{record.p_value:.3g}, t({record.df:.1f})", criterion))
    return checks


def random_zero(rows: pd.DataFrame) -> list[Check]:
    """Per grid (and environment class), random's Υ not shown beyond ±RANDOM_TOLERANCE: a minimum-effect test
    (Murphy & Myors 1999), t = (|Υ| - tolerance) / se, one-sided on the environments' mean scores (the rows of
    one environment, a grid's group sizes under `paired_group_sizes`, are not independent), Holm over the grids
    (Holm 1979). A CI that merely misses 0 fails one grid in twenty on correct data (issue 46 item 5: `validate`
    exited 1 on correct sweeps); a real imbalance beyond the tolerance still fails, the more surely the more rows."""
    from statsmodels.stats.multitest import multipletests

    random = rows[is_reference(rows, "random")]
    criterion = (f"|Υ_random| not shown beyond {RANDOM_TOLERANCE} (one-sided test on environments, Holm over grids: "
                 "p >= 0.05); a CI reaching beyond it is said: undecided at that size")
    if random.empty:
        return [Check("random_zero", "(dataset)", NOT_APPLICABLE, "no random group", criterion)]
    random = random.assign(environment=environment_ids(random))
    found = []
    for key, part in random.groupby(reference_keys(rows), sort=True, dropna=False):
        means = part.groupby("environment", sort=False)["score"].mean().to_numpy(float)
        n, mean, low, high = mean_ci(means)
        se = float(np.std(means, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
        beyond = abs(mean) - RANDOM_TOLERANCE
        p = float(stats.t.sf(beyond / se, n - 1)) if se > 0 else float(beyond <= 0)
        found.append((key, n, mean, low, high, p))
    holm = multipletests([record[-1] for record in found], method="holm")[1]
    undecided = f"; the CI reaches beyond ±{RANDOM_TOLERANCE}: not shown within it at this size (more episodes decide)"
    return [Check("random_zero", "random @ " + " ".join(map(str, key)), HOLDS if p_holm >= 1 - CONFIDENCE else FAILS,
                  f"Υ = {_ci(mean, low, high)} over {n} environments; p(|Υ| > {RANDOM_TOLERANCE}) = {p:.3g}, "
                  f"Holm p = {p_holm:.3g}" + (undecided if p_holm >= 1 - CONFIDENCE and max(-low, high) > RANDOM_TOLERANCE
                                             else ""), criterion)
            for (key, n, mean, low, high, p), p_holm in zip(found, holm)]


def oracle_ceiling(rows: pd.DataFrame) -> list[Check]:
    oracle = rows[is_reference(rows, "oracle")]
    criterion = f"the oracle's accuracy against the ceiling >= {ORACLE_ACCURACY}"
    if oracle.empty or "upsilon_best" not in rows or oracle["upsilon_best"].isna().all():
        return [Check("oracle_ceiling", "(dataset)", NOT_APPLICABLE, "no oracle group with a ceiling", criterion)]
    random = rows[is_reference(rows, "random")]
    keys = reference_keys(rows)
    references = {key: part["score"].to_numpy(float) for key, part in random.groupby(keys, dropna=False)}
    checks = []
    for key, part in oracle.groupby(keys, sort=True, dropna=False):
        scores = references.get(key, np.zeros(1))  # without a random group, its expectation 0 (spec: balance)
        accuracy, low, high = ceiling_accuracy(part["score"].to_numpy(float), part["upsilon_best"].to_numpy(float),
                                               scores)
        status = NOT_APPLICABLE if math.isnan(accuracy) else HOLDS if accuracy >= ORACLE_ACCURACY else FAILS
        checks.append(Check("oracle_ceiling", "oracle @ " + " ".join(map(str, key)), status,
                            f"accuracy {_ci(accuracy, low, high)}; Υ = {part['score'].mean():.4f}, "
                            f"Υ_best = {part['upsilon_best'].mean():.4f}", criterion))
    return checks


def below_ceiling(rows: pd.DataFrame) -> list[Check]:
    criterion = "no episode scores above its ceiling upsilon_best"
    ceilings = rows["upsilon_best"] if "upsilon_best" in rows else pd.Series(math.nan, index=rows.index)
    known = ceilings.notna()
    if not known.any():
        return [Check("below_ceiling", "(dataset)", NOT_APPLICABLE, "no row has a ceiling", criterion)]
    excess = (rows["score"] - ceilings)[known]
    above = excess > CEILING_SLACK
    worst = rows.loc[excess.idxmax(), "group"]
    return [Check("below_ceiling", "every group", FAILS if above.any() else HOLDS,
                  f"{int(above.sum())} of {int(known.sum())} episodes above; largest excess {excess.max():+.4g} "
                  f"({worst})", criterion)]


def sham_not_above_real(rows: pd.DataFrame) -> list[Check]:
    criterion = ("upper end of real - sham's 95% CI >= 0: the others' messages do not mislead on average; "
                 "the sham's distance below isolated agents is how far trusting uninformative reports leads "
                 "listeners away")
    if CONTROL not in rows or not (rows[CONTROL] == "sham").any():
        return [Check("sham_not_above_real", "(dataset)", NOT_APPLICABLE, "no sham groups", criterion)]
    keys = reference_keys(rows)
    checks = []
    shams = rows[rows[CONTROL].isin(("real", "sham"))]  # so the table's information value is over the sham
    for record in sham_table(shams, keys).to_dict("records"):
        key = tuple(record[c] for c in keys)
        subject = f"{record['sham']} @ " + " ".join(map(str, key))
        gain = _ci(record["information_value"], record["information_value_ci95_low"],
                   record["information_value_ci95_high"])
        isolated = f", isolated {record['upsilon_isolated']:.4f}" if record["isolated"] else ""
        status = HOLDS if record["information_value_ci95_high"] >= 0 else FAILS
        checks.append(Check("sham_not_above_real", subject, status,
                            f"Υ real {record['upsilon_real']:.4f}, sham {record['upsilon_sham']:.4f}{isolated}; "
                            f"real - sham = {gain}", criterion))
    return checks


def _sham_configs(rows: pd.DataFrame, sweeps: list[dict]) -> dict[str, object]:
    """The sweeps' sham configs (their sweep.json specs parsed again), the first cell's of each (group, grid, group
    size) whose group has rows, by subject."""
    from collective.sweeps.spec import parse_spec

    labels = set(rows.loc[rows[CONTROL] == "sham", "group"].astype(str))
    configs = {}
    for sweep in sweeps:
        if "spec" not in sweep:
            continue
        spec = parse_spec(sweep["spec"])
        for cell in spec.cells:
            for group, config in zip(spec.groups, cell.configs):
                if config is not None and config.sham and group.label in labels:
                    configs.setdefault(f"{group.label} @ {config.rows}x{config.cols} G={config.group_size}", config)
    return configs


def _replayed(config) -> tuple[bool, int | None, int, int]:
    """The three identities of `sham_mechanism` on `MECHANISM_EPISODES` episodes of `config`: whether the sham with
    each episode as its own shadow plays as the real protocol; in how many episodes the kept listener plays alike
    when the others start elsewhere (None when rewards need co-located agents: coordination_threshold > 1); in how
    many the sham's, and the real group's, play changes when ⊕ and ⊖ trade places."""
    from dataclasses import replace

    from collective.evaluation.environments import generate_environments
    from collective.evaluation.play import play
    from collective.evaluation.sham import play_sham
    from collective.evaluation.stepping_group import plugin_group

    n = MECHANISM_EPISODES
    real_config = config.with_changes(communication_control="real")
    episodes = generate_environments(config, np.arange(n))
    real, sham = play(real_config, episodes, record=True), play(config, episodes, record=True)
    own = play_sham(config, episodes, True, plugin_group(config), shadows=episodes)
    same = np.array_equal(own.positions, real.positions) and np.array_equal(own.rewards, real.rewards)
    kept = np.arange(n) % episodes.starts.shape[1]  # the listener kept in place: another one in each episode
    others = np.ones(episodes.starts.shape, bool)
    others[np.arange(n), kept] = False
    moved = replace(episodes, starts=np.where(others, np.roll(episodes.starts, -1, axis=0), episodes.starts))
    unmoved = None
    if config.coordination_threshold == 1:
        positions = play(config, moved, record=True).positions
        unmoved = sum(np.array_equal(positions[e, :, kept[e]], sham.positions[e, :, kept[e]]) for e in range(n))
    swapped = replace(episodes, good=episodes.evil, evil=episodes.good)

    def changed(run, settings) -> int:
        positions = play(settings, swapped, record=True).positions
        return sum(not np.array_equal(positions[e], run.positions[e]) for e in range(n))

    return same, unmoved, changed(sham, config), changed(real, real_config)


def sham_mechanism(rows: pd.DataFrame, sweeps: list[dict] = ()) -> list[Check]:
    """Whether the sham is built as it says (issue 45 item 4): re-played on the sweep's own config, the three
    identities that follow from its definition (`collective.evaluation.sham.play_sham`: each listener keeps its
    own sensing and its own part in the protocol and hears the others as they are in the shadow), each decided
    exactly, whatever the protocol makes of what it hears:
    (a) with each episode as its own shadow the others are where they are in the episode, so the sham plays as
        the real protocol, bit for bit (fails when the sham changes anything but where the others are);
    (b) a listener hears the others only from the shadow, so its play is the same, bit for bit, when the other
        members start elsewhere in its own episode (fails when the real episode's messages leak in); members do
        not block each other (spec: any number may share a cell), so under coordination_threshold 1 nothing else
        ties them; above 1 a reward needs co-located agents and (b) is not decidable;
    (c) a listener acts on its own window, so its play changes in some episode when ⊕ and ⊖ trade places in its
        own episode, the shadows kept (fails for a blindfold, which acts on the shadow's information alone and
        plays alike); undecided when the real group's play does not change either (no member ever sees a reward).
    Unlike the correlation of the sham's scores with isolated agents' it replaces, no property of the protocol
    (a rule that always follows the others' reports) decides it, and no sampling noise."""
    criterion = (f"re-played on the sweep's own config ({MECHANISM_EPISODES} episodes, the first cell of each group, "
                 "grid and group size): (a) with each episode as its own shadow the sham plays exactly as the real "
                 "protocol; (b) a listener plays exactly alike when the others start elsewhere in its episode (it "
                 "hears them from the shadow only); (c) its play changes when ⊕ and ⊖ trade places in its own "
                 "episode (it acts on its own window), wherever the real group's does")
    if CONTROL not in rows or not (rows[CONTROL] == "sham").any():
        return [Check("sham_mechanism", "(dataset)", NOT_APPLICABLE, "no sham groups", criterion)]
    if not sweeps:
        return [Check("sham_mechanism", "(dataset)", NOT_APPLICABLE,
                      "no sweep.json (a dataset folder alone): no config to re-play", criterion)]
    from collective.sweeps.spec import SpecError

    try:
        configs = _sham_configs(rows, sweeps)
    except (SpecError, ImportError) as error:
        return [Check("sham_mechanism", "(dataset)", NOT_APPLICABLE, f"the sweep's spec cannot be re-played: {error}",
                      criterion)]
    if not configs:
        return [Check("sham_mechanism", "(dataset)", NOT_APPLICABLE, "no sham group of the rows in the sweeps' specs",
                      criterion)]
    checks = []
    for subject, config in configs.items():
        same, unmoved, sham_changed, real_changed = _replayed(config)
        holds = same and unmoved in (None, MECHANISM_EPISODES) and (sham_changed > 0 or real_changed == 0)
        kept = "n/a (coordination_threshold > 1)" if unmoved is None else f"{unmoved}/{MECHANISM_EPISODES} episodes"
        checks.append(Check("sham_mechanism", subject, HOLDS if holds else FAILS,
                            f"(a) own episode as shadow = real: {'exactly' if same else 'NO'}; (b) listener alike "
                            f"with the others moved: {kept}; (c) play changed by ⊕↔⊖: {sham_changed}/"
                            f"{MECHANISM_EPISODES} episodes (real group {real_changed}/{MECHANISM_EPISODES})",
                            criterion))
    return checks


def _k_slope(part: pd.DataFrame) -> str:
    """The K slope within `part`'s cells (cell intercepts, HC2 errors: episodes are independent within a cell once
    its mean is removed; t on episodes - cells - 1 df), or "" when K does not vary."""
    cells = pd.get_dummies(part["cell"], dtype=float).to_numpy()
    k = part["k_raw"].to_numpy(float)
    if len(part) <= cells.shape[1] + 2 or np.ptp(k) == 0:
        return ""
    design = np.column_stack([cells, k - k.mean()])
    fit = clustered_ols(part["score"].to_numpy(float), design, np.arange(len(part)),
                        [*map(str, range(cells.shape[1])), "K"])
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, len(part) - design.shape[1]) * fit.std_errors[-1]
    return f" K slope {_ci(fit.params[-1], fit.params[-1] - half, fit.params[-1] + half)}"


def k_by_motion(rows: pd.DataFrame) -> list[Check]:
    """Per group type and grid, Υ of each motion kind (the rows' `motion`, read off the played paths by
    `collective.environments.motion`) and the K slope within each kind."""
    criterion = "a report: Υ and the K effect of stationary, periodic and drifting patterns apart"
    if "motion" not in rows or rows["motion"].isna().all():
        return [Check("k_by_motion", "(dataset)", NOT_APPLICABLE,
                      "no motion column (rows of a sweep made before motion descriptors were recorded: rerun it)", criterion)]
    checks = []
    for (group, grid), part in levels(rows, ["group", "grid"], columns=["motion", "score", "k_raw", "cell"], sort=True):
        figures = []
        for kind in MOTION_KINDS:
            of_kind = part[part["motion"] == kind]
            if len(of_kind):
                figures.append(f"{kind} {of_kind['score'].mean():.4f} n={len(of_kind)} "
                               f"(K {int(of_kind['k_raw'].min())}-{int(of_kind['k_raw'].max())}){_k_slope(of_kind)}")
        checks.append(Check("k_by_motion", f"{group} @ {grid}", REPORT, "; ".join(figures), criterion))
    return checks


SUITE = (isolated_group_size, random_zero, oracle_ceiling, below_ceiling, sham_not_above_real, sham_mechanism,
         k_by_motion)


def validate(rows: pd.DataFrame, sweeps: list[dict] = ()) -> pd.DataFrame:
    """Every check of the suite on a dataset's rows: one row per (check, subject). `sweeps`: the datasets' sweep.json
    contents (`sham_mechanism` re-plays their shams)."""
    runs = [partial(run, sweeps=sweeps) if run is sham_mechanism else run for run in SUITE]
    return pd.DataFrame([vars(check) for run in runs for check in run(rows)], columns=COLUMNS)


def format_report(report: pd.DataFrame, labels: dict[str, str] | None = None) -> str:
    """One line per check: status, check, subject (its group by its display label, `labels`), figure; the criteria
    once per check below."""
    lines = [f"{r.status:<7} {r.check:<20} {labelled(r.subject, labels or {}):<40} {r.figure}"
             for r in report.itertuples(index=False)]
    criteria = report.drop_duplicates("check")
    lines += ["", "Criteria:"] + [f"  {r.check}: {r.criterion}" for r in criteria.itertuples(index=False)]
    failed = int((report["status"] == FAILS).sum())
    lines.append(f"{failed} of {int(report['status'].isin([HOLDS, FAILS]).sum())} checks fail" if failed
                 else f"all {int((report['status'] == HOLDS).sum())} checks hold")
    return "\n".join(lines)
