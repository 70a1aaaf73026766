"""Communication in the analysis (spec §6; issue 14 points 3-4): what a collective gains per bit it sends,
how Υ goes with the entropy of its messages, and what its controls tell: the information value of its
messages, what the protocol's mechanics buy without information, and the members' reliance on reports.

- `communication`: each collective (a group with a protocol) against the isolated agents of the same
  behaviour or mix, paired by (cell, episode): the gain in Υ, its traffic (the rows' accounting), its
  message entropy and information (protocols/__init__.py), and the gain per 1000 bits sent per iteration
  and per information bit per iteration;
- `communication_entropy`: per collective, the slope of Υ against the message entropy across its cells
  (the entropy of a protocol's messages is a property of the cell: grid, group size, K range), within
  cells (episodes of a cell whose messages carried more or less), and within cells and K (episodes of a
  cell and of the same K: the entropy rises with K and Υ falls with it, so only this slope reads what the
  messages carried beyond what K sets; issue 22 point 6);
- `sham`: each real group beside its controls (communication_control = sham: each member keeps its own
  sensing and part in the protocol and hears the others as they were in a shadow episode; content_free: the
  same with the episode emptied as the shadow, every report saying nothing seen) and the isolated agents:
  the gain over isolated agents, the information value over the content-free control (else the sham), the
  mechanics (content-free over isolated) and the reliance (isolated over sham).

Gains follow the design at the cell level, as the focal table does (`inference.stratified_difference`): groups
of a cell play the same environments, so scores are paired by (cell, episode); cells are strata, the estimate is
the mean of per-cell mean differences, SE = sqrt(Σ SE_cell²)/cells, Student-t on pairs - cells df, and p values
are Holm-corrected over a table. A ratio (gain per bit) is the ratio of the cell-stratified means, with the
delta method: the SE of the linearised differences d - R·b, stratified the same way, over the mean of b.
The entropy slopes are OLS with CR2 errors clustered by cell, t on cells - 1 df
(`cluster_robust.clustered_slope`).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.base import Analysis, Table, cell_ids, environment_ids, levels, run_ids
from collective.analysis.cluster_robust import clustered_slope
from collective.analysis.inference import CONFIDENCE, holm, stratified_difference, two_way_variance

KEY = ["cell", "episode"]
ACCOUNTING = "communication_accounting"
CONTROL = "communication_control"
ENTROPY = "message_entropy_bits"
K = "k_raw"
INFORMATION = "information_bits_per_iteration"
TRAFFIC = ("messages_per_iteration", "bits_per_iteration", ENTROPY, INFORMATION, "distinct_messages_per_iteration",
           "distinct_information_bits_per_iteration")
KILOBIT = 1000.0

COMMUNICATION_NOTE = (
    "gain = Υ(collective) - Υ(isolated: same behaviour or mix, protocol none), paired by (cell, episode), "
    "stratified by cell (mean of per-cell mean differences, SE = sqrt(Σ SE²)/cells, t on pairs - cells df). "
    "Traffic per scored iteration under the rows' communication_accounting (protocols/__init__.py); "
    "message_entropy_bits = empirical entropy of the messages' symbols per episode (plug-in + Miller-Madow), "
    "information = entropy x messages of reads_and_writes (Chmait et al., AGI 2015, measure communication by "
    "its entropy), which counts every copy of a message (one map read by ten searchers: ten messages); "
    "distinct_messages_per_iteration = the episode's distinct messages / T and distinct_information = entropy x "
    "that: a copy or a repeat says nothing new (H(X, X) = H(X); Cover & Thomas 2006, §2.2). gain_per_kbit = gain per 1000 bits sent per iteration, gain_per_information_bit = gain per "
    "information bit per iteration: ratios of the stratified means, delta-method CIs.")
ENTROPY_NOTE = (
    "OLS of the episode score on its message entropy (bits per message), per collective: slope_across_cells "
    "on the rows with an intercept (its variation is mostly between cells: grid, group size, K range, so "
    "this is an association, confounded by whatever else differs between the cells), slope_within_cells on "
    "scores and entropies centred on their cell means (cell fixed effects), slope_within_cells_and_k centred "
    "on their means per cell and K (k_raw: cell x K fixed effects, K as a stratum). A message's entropy rises "
    "with K (more distinct positions and windows to report; wisdom on the factor study: 2.1 bits at K = 2, "
    "7.1 at K = 23) while Υ falls with K, so the within-cell slope is confounded by K and the within-cell-and-K "
    "slope is the reading: whether episodes whose messages carried more, at the same K, score differently "
    "(stratification on a confounder, e.g. Wooldridge 2010, Econometric Analysis of Cross Section and Panel "
    "Data, 2nd ed., §10.5, fixed effects). CR2 errors clustered by cell (Bell & McCaffrey 2002), t on cells - "
    "1 df; blank with too few cells (across: 3), no variation, or no k_raw column.")
SHAM_NOTE = (
    "Controls beside each real group, on the same environments. Sham (communication_control = sham): a second "
    "copy of the group plays a shadow episode of the same cell for real; each sham member keeps its own sensing "
    "and its own part in the protocol (report, bid, deposit, write) and hears, each iteration, what the protocol "
    "tells it with every other member as it was in the shadow: the protocol's rule and traffic (messages, bits, "
    "entropy: compare the columns), nothing from the others about the scored episode, but their real reports of "
    "another world. Content-free (communication_control = content_free): the same with each episode emptied as "
    "its shadow (every cell pays 0; the others' start cells and draws kept), so every report, bid, deposit or "
    "write of the others says nothing seen: the protocol's mechanics without information. Learners that hear the "
    "protocol: noise (each symbol a uniform draw among the ten: the same table, told nothing) and deaf (one "
    "symbol: a table ten times smaller). Readings, each paired by (cell, episode), stratified by cell, t on pairs "
    "- cells df (with learners' kept tables, clustered by environment and by training run, two-way, t on the "
    "smaller count - 1): gain_over_isolated = Υ(real) - Υ(isolated "
    "agents of the same members), what communicating buys; information_value = Υ(real) - Υ(baseline), what the "
    "others' messages being about the episode is worth (p_holm over the table), the baseline "
    "(information_baseline) the content-free control when the group has one (or noise, learners' uninformative "
    "hearing), else the sham, whose value then counts the members' trust in reports as well as the information; "
    "mechanics = Υ(content-free) - Υ(isolated), what the protocol's mechanics buy without information (herding, "
    "tie-breaks toward the others, one's own memory or deposits); reliance = Υ(isolated) - Υ(sham), what acting "
    "on uninformative reports costs (0: the members ignore what they hear; large: they follow any report); "
    "gain_over_heading = Υ(real) - Υ(heading_search alone), a searcher's gain over one that keeps its heading "
    "when it sees nothing (what the group buys beyond persistence); dilution = Υ(deaf) - Υ(noise), what "
    "hearing uninformative symbols costs a learner (its table split ten ways). A learner's information_value "
    "(real - noise) is what the symbols tell at the ten-fold table's size; real - deaf = information_value - "
    "dilution is what hearing buys a learner net; no mechanics is read for learners (noise - isolated is the "
    "table's split).")


def group_types(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per group label: behaviour, mix, protocol, protocol_params (text), communication_control."""
    first = rows[[c for c in ("group", "behaviour", "mix", "protocol", "protocol_params", CONTROL) if c in rows]] \
        .drop_duplicates("group")
    frame = first.assign(protocol_params=first["protocol_params"].astype(str) if "protocol_params" in first else "",
                         **{CONTROL: first[CONTROL] if CONTROL in first else "real"})
    return frame[["group", "behaviour", "mix", "protocol", "protocol_params", CONTROL]].set_index("group")


def isolated_counterparts(types: pd.DataFrame, group: pd.Series) -> list[str]:
    """The isolated group types (protocol none) of `group`'s behaviour or mix, in `types` (`group_types`)."""
    match = (types["behaviour"] == group["behaviour"]) & (types["mix"] == group["mix"]) & \
        (types["protocol"] == "none")
    return list(types.index[match])


def _levels(frame: pd.DataFrame, keys: list[str]):
    """(key tuple, part) for each level of `keys` (one level when there are none)."""
    if not keys:
        yield (), frame
        return
    for key, part in levels(frame, keys, observed=True, sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), part


def paired_scores(rows: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Rows of several groups on the same environments: one row per (cell, episode) all played, with the
    first group's other columns, and `score_<name>` (plus traffic columns `<column>_<name>`, and `_run_<name>`
    where the rows carry training runs, `_with_runs`) for each name -> group label."""
    (first_name, first), *others = labels.items()
    carried = [c for c in TRAFFIC if c in rows] + (["_run"] if "_run" in rows else [])
    frame = rows[rows["group"] == first].rename(columns={"score": f"score_{first_name}",
                                                         **{c: f"{c}_{first_name}" for c in carried}})
    for name, label in others:
        part = rows[rows["group"] == label][KEY + ["score"] + carried]
        frame = frame.merge(part.rename(columns={"score": f"score_{name}", **{c: f"{c}_{name}" for c in carried}}),
                            on=KEY)
    return frame


def _with_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with `_run` (the training run behind a learner's tables, `base.run_ids`; -1 for rows without
    kept tables) and `_environment` (`base.environment_ids`) where some row has a run, else as they are; rows that
    carry them already (`add_communication_tables` adds them once for its tables) as they are."""
    if "_run" in rows:
        return rows
    runs = run_ids(rows)
    if runs is None:
        return rows
    kept = rows["training_run"].to_numpy() >= 0
    return rows.assign(_run=np.where(kept, runs, -1), _environment=environment_ids(rows))


def _stratified_mean(cells: np.ndarray, values: np.ndarray) -> float:
    """The mean of per-cell means (the cell-stratified mean)."""
    return float(pd.Series(values).groupby(cells).mean().mean())


def _gain(part: pd.DataFrame, subject: str, baseline: str, prefix: str) -> dict:
    """subject - baseline, stratified by cell (`inference.stratified_difference`); where either group's learners
    keep tables trained in runs (`_with_runs`), its SE is clustered by environment and by the pair of runs too
    (`inference.two_way_variance`, issue 45 item 3: a learner's pairs share its tables' luck), on its df."""
    cells = part["cell"].to_numpy()
    first, second = part[f"score_{subject}"].to_numpy(), part[f"score_{baseline}"].to_numpy()
    statistics = stratified_difference(cells, first, second)
    runs = part[[f"_run_{subject}", f"_run_{baseline}"]].to_numpy() if f"_run_{subject}" in part else None
    if runs is not None and (runs >= 0).any() and len(part) > 1:
        differences = first - second
        by_cell = pd.Series(differences).groupby(cells)
        means, sizes = by_cell.transform("mean").to_numpy(), by_cell.transform("size").to_numpy()
        weights = len(part) / (by_cell.ngroups * sizes)  # the stratified mean's, times n
        pair_runs = np.unique(runs, axis=0, return_inverse=True)[1].ravel()
        untrained = (runs < 0).all(axis=1)  # a pair without kept tables on either side: a run of its own
        pair_runs[untrained] = pair_runs.max() + 1 + np.arange(int(untrained.sum()))
        df, variance = two_way_variance((differences - means) * weights, part["_environment"].to_numpy(),
                                        pair_runs)
        mean, se = statistics["difference"], math.sqrt(variance) if variance > 0 else math.nan
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se if df >= 1 else math.nan
        statistics.update(ci95_low=mean - half, ci95_high=mean + half,
                          p_t=float(2 * stats.t.sf(abs(mean) / se, df)) if df >= 1 and se > 0 else math.nan)
    return {prefix: statistics["difference"], f"{prefix}_ci95_low": statistics["ci95_low"],
            f"{prefix}_ci95_high": statistics["ci95_high"], f"{prefix}_p": statistics["p_t"]}


def _gain_per_unit(cells: np.ndarray, differences: np.ndarray, units: np.ndarray, scale: float = 1.0) -> tuple:
    """(ratio, low, high) of the cell-stratified mean difference per cell-stratified mean unit, times
    `scale`; delta-method CI (module docstring). NaN where the units are missing or their mean is 0."""
    if np.isnan(units).any():
        return math.nan, math.nan, math.nan
    mean_units = _stratified_mean(cells, units)
    if mean_units == 0:
        return math.nan, math.nan, math.nan
    ratio = _stratified_mean(cells, differences) / mean_units
    linearised = stratified_difference(cells, differences - ratio * units, np.zeros(len(units)))
    df = linearised["pairs"] - linearised["cells"]
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, df) * linearised["std_error"] / mean_units if df > 0 else math.nan
    return ratio * scale, (ratio - half) * scale, (ratio + half) * scale


def communication_table(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """The `communication` table (COMMUNICATION_NOTE); a learner's gain clustered by training run too (`_gain`)."""
    types = group_types(rows)
    rows = _with_runs(rows)
    keys = strata + ([ACCOUNTING] if ACCOUNTING in rows and ACCOUNTING not in strata else [])
    records = []
    for label, group in types[types["protocol"] != "none"].iterrows():
        for baseline in isolated_counterparts(types, group):
            paired = paired_scores(rows, {"collective": label, "isolated": baseline})
            for key, part in _levels(paired, keys):
                cells = part["cell"].to_numpy()
                differences = (part["score_collective"] - part["score_isolated"]).to_numpy()
                traffic = {column: _stratified_mean(cells, part[f"{column}_collective"].to_numpy(float))
                           if f"{column}_collective" in part else math.nan for column in TRAFFIC}
                per_kbit = _gain_per_unit(cells, differences, part["bits_per_iteration_collective"].to_numpy(float),
                                          KILOBIT)
                information = part[f"{INFORMATION}_collective"].to_numpy(float) if f"{INFORMATION}_collective" \
                    in part else np.full(len(part), math.nan)
                per_information = _gain_per_unit(cells, differences, information)
                records.append(dict(collective=label, isolated=baseline, **dict(zip(keys, key)),
                                    cells=len(np.unique(cells)), pairs=len(part),
                                    upsilon=_stratified_mean(cells, part["score_collective"].to_numpy()),
                                    **_gain(part, "collective", "isolated", "gain"), **traffic,
                                    gain_per_kbit=per_kbit[0], gain_per_kbit_ci95_low=per_kbit[1],
                                    gain_per_kbit_ci95_high=per_kbit[2], gain_per_information_bit=per_information[0],
                                    gain_per_information_bit_ci95_low=per_information[1],
                                    gain_per_information_bit_ci95_high=per_information[2]))
    columns = ["collective", "isolated", *keys, "cells", "pairs", "upsilon", "gain", "gain_ci95_low", "gain_ci95_high",
               "gain_p", *TRAFFIC, "gain_per_kbit", "gain_per_kbit_ci95_low", "gain_per_kbit_ci95_high",
               "gain_per_information_bit", "gain_per_information_bit_ci95_low", "gain_per_information_bit_ci95_high"]
    frame = pd.DataFrame(records, columns=columns).rename(columns={"gain_p": "p_t"})
    return holm(frame).drop(columns=["p_wilcoxon_holm"], errors="ignore")


def communication_entropy_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The `communication_entropy` table (ENTROPY_NOTE)."""
    types = group_types(rows)
    keys = ["group"] + ([ACCOUNTING] if ACCOUNTING in rows else [])
    read = [c for c in dict.fromkeys([*keys, "seed", "cell", K, "score", ENTROPY]) if c in rows]  # what is used
    measured = rows.loc[rows["group"].isin(types.index[types["protocol"] != "none"]) & rows[ENTROPY].notna(), read]
    records = []
    for key, part in _levels(measured, keys):
        clusters = cell_ids(part)
        y, x = part["score"].to_numpy(float), part[ENTROPY].to_numpy(float)
        cell_means = part.assign(_cell=clusters).groupby("_cell")[["score", ENTROPY]].transform("mean")
        across = clustered_slope(y, x, clusters, intercept=True, minimum_cells=3)
        within = clustered_slope(y - cell_means["score"].to_numpy(), x - cell_means[ENTROPY].to_numpy(), clusters,
                                 intercept=False, minimum_cells=2)
        within_k = (math.nan,) * 4
        if K in part:
            stratum_means = part.assign(_cell=clusters).groupby(["_cell", K])[["score", ENTROPY]].transform("mean")
            within_k = clustered_slope(y - stratum_means["score"].to_numpy(), x - stratum_means[ENTROPY].to_numpy(),
                                       clusters, intercept=False, minimum_cells=2)
        by_cell = part.assign(_cell=clusters).groupby("_cell")[ENTROPY].mean()
        records.append(dict(zip(keys, key), cells=len(by_cell), episodes=len(part), upsilon=float(y.mean()),
                            message_entropy_bits=float(x.mean()),
                            entropy_sd_across_cells=float(by_cell.std(ddof=1)) if len(by_cell) > 1 else math.nan,
                            slope_across_cells=across[0], across_ci95_low=across[1], across_ci95_high=across[2],
                            across_p=across[3], slope_within_cells=within[0], within_ci95_low=within[1],
                            within_ci95_high=within[2], within_p=within[3], slope_within_cells_and_k=within_k[0],
                            within_k_ci95_low=within_k[1], within_k_ci95_high=within_k[2], within_k_p=within_k[3]))
    return pd.DataFrame(records, columns=[*keys, "cells", "episodes", "upsilon", "message_entropy_bits",
                                          "entropy_sd_across_cells", "slope_across_cells", "across_ci95_low",
                                          "across_ci95_high", "across_p", "slope_within_cells", "within_ci95_low",
                                          "within_ci95_high", "within_p", "slope_within_cells_and_k",
                                          "within_k_ci95_low", "within_k_ci95_high", "within_k_p"])


# the sham table's readings (SHAM_NOTE)
READINGS = ("gain_over_isolated", "gain_over_heading", "information_value", "mechanics", "reliance", "dilution")
# The controls the sham table reads beside a real group (communication_control values; "noise", learners' hearing
# of uninformative symbols, once a dataset has it), and information_value's baselines, the first present taken:
# the content-free ones (the protocol's mechanics, nothing seen), else the sham.
HEADING = "heading_search"  # the isolated searcher that keeps its heading when blind (collective.behaviours.heading)
TABLE_CONTROLS = ("sham", "content_free", "noise", "deaf")
CONTENT_FREE = ("content_free", "noise")
INFORMATION_BASELINES = (*CONTENT_FREE, "sham")


def sham_table(rows: pd.DataFrame, strata: list[str]) -> pd.DataFrame:
    """The `sham` table (SHAM_NOTE): one row per real group with a control of TABLE_CONTROLS (and level of
    `strata`); a control's columns only when some row has it."""
    types = group_types(rows)
    rows = _with_runs(rows)
    played = rows.groupby("group", observed=True)["cell"].agg(set)  # a baseline pairs only where it played all
    identity = ["behaviour", "mix", "protocol", "protocol_params"]
    records = []
    for real, group in types[(types[CONTROL] == "real") & (types["protocol"] != "none")].iterrows():
        same = (types[identity] == group[identity]).all(axis=1)
        controls = {name: types.index[same & (types[CONTROL] == name)] for name in TABLE_CONTROLS}
        controls = {name: labels[0] for name, labels in controls.items() if len(labels)}
        baseline = next((name for name in INFORMATION_BASELINES if name in controls), None)
        if baseline is None:
            continue
        isolated = isolated_counterparts(types, group)
        heading = [label for label in types.index[(types["behaviour"] == HEADING) & (types["protocol"] == "none")]
                   if group["behaviour"] == "local_search" and not group["mix"] and played[real] <= played[label]]
        labels = {"real": real, **controls, **({"isolated": isolated[0]} if isolated else {}),
                  **({"heading": heading[0]} if heading else {})}
        for key, part in _levels(paired_scores(rows, labels), strata):
            cells = part["cell"].to_numpy()
            record = dict(real=real, **controls, isolated=isolated[0] if isolated else "",
                          **({"heading": heading[0]} if heading else {}),
                          information_baseline=baseline, **dict(zip(strata, key)),
                          cells=len(np.unique(cells)), pairs=len(part),
                          **{f"upsilon_{name}": _stratified_mean(cells, part[f"score_{name}"].to_numpy())
                             for name in labels})
            if isolated:
                record.update(_gain(part, "real", "isolated", "gain_over_isolated"))
            if heading:
                record.update(_gain(part, "real", "heading", "gain_over_heading"))
            record.update(_gain(part, "real", baseline, "information_value"))
            if isolated and baseline == "content_free":  # noise - isolated would be the table's split
                record.update(_gain(part, baseline, "isolated", "mechanics"))
            if isolated and "sham" in controls:
                record.update(_gain(part, "isolated", "sham", "reliance"))
            if "deaf" in controls and "noise" in controls:
                record.update(_gain(part, "deaf", "noise", "dilution"))
            for column in TRAFFIC:
                for name in ("real", *controls):
                    values = part[f"{column}_{name}"].to_numpy(float) if f"{column}_{name}" in part else \
                        np.full(len(part), math.nan)
                    record[f"{column}_{name}"] = _stratified_mean(cells, values)
            records.append(record)
    present = [name for name in TABLE_CONTROLS if any(name in record for record in records)] or ["sham"]
    gains = [f"{name}{suffix}" for name in READINGS for suffix in ("", "_ci95_low", "_ci95_high")]
    heading = ["heading"] if any(record.get("heading") for record in records) else []
    columns = ["real", *present, "isolated", *heading, "information_baseline", *strata, "cells", "pairs",
               "upsilon_real", *[f"upsilon_{name}" for name in present], "upsilon_isolated",
               *[f"upsilon_{name}" for name in heading], *gains, "information_value_p",
               *[f"{column}_{name}" for column in TRAFFIC for name in ("real", *present)]]
    frame = pd.DataFrame(records).reindex(columns=columns).rename(columns={"information_value_p": "p_t"})
    return holm(frame).drop(columns=["p_wilcoxon_holm"], errors="ignore")


def add_communication_tables(analysis: Analysis, rows: pd.DataFrame, strata: list[str]) -> None:
    """The communication tables when the dataset has collectives; the entropy table needs the rows' message
    entropy (datasets swept before it was recorded skip it, saying so); the sham table needs sham groups."""
    types = group_types(rows)
    if not (types["protocol"] != "none").any():
        return
    rows = _with_runs(rows)  # once for the tables that pair learners (`_gain`)
    analysis.add(Table("communication", "Collective gain per bit sent and per information bit", COMMUNICATION_NOTE,
                       communication_table(rows, strata)))
    if ENTROPY not in rows:
        analysis.skipped["communication_entropy"] = (f"the dataset has no {ENTROPY} column (swept before the "
                                                     "message entropy was recorded); re-run the sweep to get it.")
    else:
        analysis.add(Table("communication_entropy", "Υ against the entropy of the messages", ENTROPY_NOTE,
                           communication_entropy_table(rows)))
    if types[CONTROL].isin(TABLE_CONTROLS).any():
        in_strata = f" within {', '.join(strata)}" if strata else ""
        analysis.add(Table("sham", f"Communication readings: gain over isolated agents, information value, "
                                   f"mechanics and reliance (sham and content-free controls){in_strata}",
                           SHAM_NOTE, sham_table(rows, strata)))
