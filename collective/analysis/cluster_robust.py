"""OLS with cluster-robust errors, for the regression and the tables' slopes: the CR2 covariance, the
bias-reduced linearisation of Bell & McCaffrey (2002, "Bias reduction in standard errors for linear
regression with multi-stage samples", Survey Methodology 28(2)), each coefficient's Satterthwaite degrees of
freedom (Bell & McCaffrey 2002 §4; Pustejovsky & Tipton 2018, JBES 36(4), eq. 11), and the slope of y on x
with a t interval on clusters - 1 df.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from collective.analysis.inference import CONFIDENCE

ROUNDING = 1e-9  # a sum of squares under this fraction of its terms' size is 0 to rounding


@dataclass(frozen=True)
class ClusteredFit:
    """OLS estimates with a CR2 cluster-robust covariance (and each coefficient's Satterthwaite df when asked)."""

    names: list[str]
    params: np.ndarray  # (terms,)
    covariance: np.ndarray  # (terms, terms)
    clusters: int
    r_squared: float
    adj_r_squared: float
    df: np.ndarray | None = None  # (terms,) Satterthwaite degrees of freedom; NaN where undefined

    @property
    def std_errors(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))


def _cluster_blocks(clusters: np.ndarray) -> list[np.ndarray]:
    """The clusters' rows, clusters of one size stacked: one (clusters of that size, size) array of row indices
    per size, each cluster's rows in order, so that the per-cluster algebra runs as stacked array operations
    rather than a Python loop over clusters. Clusters are numbered by hashing (`pd.factorize`), not by sorting
    every row as `np.unique` does (seconds at 10^7 rows)."""
    codes = pd.factorize(clusters, sort=True)[0]
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.cumsum(sizes) - sizes
    return [order[starts[sizes == size][:, None] + np.arange(size)] for size in np.unique(sizes)]


def _adjustment(x: np.ndarray, root: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, scale) with A_c v = v + u (scale * u'v) for a stack of clusters x (..., rows of c, terms), A_c =
    (I - H_cc)^(-1/2), H_cc = X_c B X_c' = (X_c R)(X_c R)' with B = R R'. H_cc has rank <= terms, so A_c is
    applied through the thin SVD of X_c R; a cluster of no more rows than terms through the eigenvectors of its
    (rows x rows) H_cc itself (the same A_c, 3-30x faster on the many small clusters of environments), and a
    cluster of one row through its leverage h = x B x' alone (HC2's 1/sqrt(1 - h))."""
    reduced = x @ root
    if reduced.shape[-2] == 1:
        eigenvalues, u = np.sum(reduced * reduced, axis=-1), np.ones(reduced.shape[:-1] + (1,))
    elif reduced.shape[-2] <= reduced.shape[-1]:
        eigenvalues, u = np.linalg.eigh(reduced @ np.swapaxes(reduced, -1, -2))
    else:
        u, singular, _ = np.linalg.svd(reduced, full_matrices=False)
        eigenvalues = singular ** 2  # the eigenvalues of H_cc
    return u, 1 / np.sqrt(np.maximum(1 - eigenvalues, 1e-12)) - 1


def _adjust(u: np.ndarray, scale: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """A_c v for the columns v of `vectors` (..., rows of c, k), A_c given by `_adjustment`."""
    return vectors + u @ (scale[..., None] * (np.swapaxes(u, -1, -2) @ vectors))


def clustered_ols(y: np.ndarray, design: np.ndarray, clusters: np.ndarray, names: list[str],
                  degrees: bool = False) -> ClusteredFit:
    """OLS of y (rows,) on design (rows, terms) with the CR2 covariance (Bell & McCaffrey 2002):
    V = B Σ_c X_c' A_c e_c e_c' A_c X_c B, B = (X'X)^-1, A_c = (I - H_cc)^(-1/2), H_cc = X_c B X_c'; with
    `degrees`, each coefficient's Satterthwaite df too (`_SatterthwaiteSums`), from the same A_c."""
    bread = np.linalg.inv(design.T @ design)
    params = bread @ (design.T @ y)
    residuals = y - design @ params
    root = np.linalg.cholesky(bread)
    meat = np.zeros_like(bread)
    count = 0
    sums = _SatterthwaiteSums(bread) if degrees else None
    for rows in _cluster_blocks(clusters):
        x = design[rows]  # (clusters, rows of each, terms)
        u, scale = _adjustment(x, root)
        scores = (np.swapaxes(x, -1, -2) @ _adjust(u, scale, residuals[rows][..., None]))[..., 0]  # (clusters, terms)
        meat += scores.T @ scores
        count += len(rows)
        if sums is not None:
            sums.add(x, _adjust(u, scale, x @ bread))
    n, terms = design.shape
    total = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1 - float(residuals @ residuals) / total if total > 0 else math.nan
    adj = 1 - (1 - r_squared) * (n - 1) / (n - terms) if n > terms else math.nan
    return ClusteredFit(names, params, bread @ meat @ bread, count, r_squared, adj,
                        sums.df() if sums is not None else None)


class _SatterthwaiteSums:
    """Each coefficient's Satterthwaite degrees of freedom of its CR2 variance (Bell & McCaffrey 2002 §4;
    Pustejovsky & Tipton 2018 eq. 11, working model σ²I), from sums over clusters added a stack at a time: for the
    contrast c = e_j, c'Vc = y' G G' y with the columns g_c = (I - H) S_c' w_c, w_c = A_c X_c B c (S_c' embeds
    cluster c's rows), so df = tr(G'G)² / tr((G'G)²). As (I - H) is idempotent and X'(I - H) = 0, G'G = D - P,
    D = diag(w_c'w_c), P = M' B M, M = [X_c' w_c]_c. P has rank <= terms, so both traces come from terms x terms
    products, never the clusters x clusters G'G (which grows with the square of the clusters: gigabytes at a few
    ten thousand environments): tr(G'G) = Σ_c (d_c - p_c) and tr((G'G)²) = Σ_c (d_c - p_c)² + tr(B S B S) -
    Σ_c p_c², with d_c = w_c'w_c, m_c = X_c' w_c, p_c = P_cc = m_c' B m_c and S = Σ_c m_c m_c'. Where G'G is 0
    (every cluster's rows fit exactly, e.g. one cluster) the df is NaN: undefined; also where it is 0 to rounding
    (tr(G'G) under ROUNDING of Σ_c d_c), whose ratio of two roundings read as a df of 0 or 2e-16."""

    def __init__(self, bread: np.ndarray):
        terms = len(bread)
        self.bread = bread
        self.trace = np.zeros(terms)  # per j: Σ_c (d_c - p_c)
        self.size = np.zeros(terms)  # per j: Σ_c d_c, the scale tr(G'G) is 0 against
        self.squares = np.zeros(terms)  # per j: Σ_c (d_c - p_c)² - Σ_c p_c²
        self.s = np.zeros((terms, terms, terms))  # per j: S

    def add(self, x: np.ndarray, weights: np.ndarray) -> None:
        """Add a stack of clusters: x (clusters, rows of each, terms), weights (clusters, rows of each, j): the
        w_c of every j."""
        d = np.sum(weights * weights, axis=-2)  # (clusters, j)
        m = np.ascontiguousarray(np.moveaxis(np.swapaxes(x, -1, -2) @ weights, -1, 0))  # (j, clusters, terms): m_c'
        p = np.einsum("jct,jct->cj", (m.reshape(-1, len(self.bread)) @ self.bread).reshape(m.shape), m)  # (clusters, j)
        self.trace += np.sum(d - p, axis=0)
        self.size += np.sum(d, axis=0)
        self.squares += np.sum((d - p) ** 2, axis=0) - np.sum(p * p, axis=0)
        self.s += np.swapaxes(m, -1, -2) @ m

    def df(self) -> np.ndarray:
        spread = self.bread @ self.s  # (j, terms, terms): B S
        squares = self.squares + np.einsum("jab,jba->j", spread, spread)
        defined = (squares > 0) & (self.trace > ROUNDING * self.size)
        return np.divide(self.trace ** 2, squares, out=np.full(len(squares), math.nan), where=defined)


def satterthwaite_df(design: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """(terms,) each coefficient's Satterthwaite df for `design` clustered by `clusters` (`_SatterthwaiteSums`);
    the df depend on the design alone, not on y."""
    return clustered_ols(np.zeros(len(design)), design, clusters, [""] * design.shape[1], degrees=True).df


def clustered_slope(y: np.ndarray, x: np.ndarray, clusters: np.ndarray, intercept: bool, minimum_cells: int) -> tuple:
    """(slope, low, high, p) of y on x, CR2 by cluster, t on clusters - 1 df; NaN where not estimable."""
    n_clusters = len(np.unique(clusters))
    if n_clusters < minimum_cells or np.ptp(x) < 1e-12:
        return math.nan, math.nan, math.nan, math.nan
    design = np.column_stack([np.ones(len(x)), x - x.mean()]) if intercept else x[:, None]
    fit = clustered_ols(y, design, clusters, ["Intercept", "slope"][-design.shape[1]:])
    estimate, error, df = fit.params[-1], fit.std_errors[-1], n_clusters - 1
    if not error > 0:
        return estimate, math.nan, math.nan, math.nan
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, df) * error
    return estimate, estimate - half, estimate + half, float(2 * stats.t.sf(abs(estimate / error), df))
