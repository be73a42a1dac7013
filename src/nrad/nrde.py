"""NRDE: the noise-robust density estimator, as a scikit-learn outlier detector."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, OutlierMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from nrad.calibration import TailModel
from nrad.errors import FitDivergedError, NradError
from nrad.flow import CouplingFlow
from nrad.kernel import ScoringKernel
from nrad.preprocess import standardization
from nrad.sources import pure_log_density, source_influence, split_sources
from nrad.threads import SCORE_CHUNK, map_chunks, one_torch_thread, run_chunks

#: Training rows used to measure source influence (a mean; 2,000 rows pin it
#: down well), fewer for wide data so rows x d stays near 200,000.
INFLUENCE_ROWS = 2000
#: ... and this many when every source is pure (nothing to split: they only describe the sources).
DESCRIBE_INFLUENCE_ROWS = 200
INFLUENCE_CELLS = 200_000
#: Standardized inputs are clipped to +-this many training sd when scoring:
#: rows beyond it score as if they were at it (still extreme, always finite).
MAX_ABS_Z = 1e4
#: Gradient steps the automatic epoch count aims at.  Tables small enough to
#: stop early never reach it; more steps cost time without gaining AUROC
#: (docs/scaling.md, "Fitting").
STEP_BUDGET = 1000
#: The penalty is evaluated on every PENALTY_EVERY-th step, weighted by
#: PENALTY_EVERY so its expected gradient is unchanged: a step with the
#: penalty costs a few plain ones (its Jacobian columns and their backward
#: pass).
PENALTY_EVERY = 4
#: Rows of a given held-out set that the early stopping reads, at most (evenly spaced through it).
MAX_HELD_ROWS = 2048
#: Smallest validation part for which early stopping is trusted.
MIN_VALIDATION_ROWS = 20


class NRDE(OutlierMixin, TransformerMixin, BaseEstimator):
    """Noise-Robust Density Estimation for tabular anomaly detection.

    A normalizing flow maps each (standardized) row to independent sources.
    Training maximizes likelihood plus an IMA Jacobian penalty that pushes
    the generator's Jacobian columns to be orthogonal, which makes the
    sources identifiable up to permutation and scale.  Sources whose
    influence on the data lies far below the rest are treated as noise; a
    row is scored by the log density of its pure data ``g(s_P, 0)`` on the
    pure manifold, so changes caused by noise sources do not move the score.
    See docs/method.md.

    Parameters
    ----------
    n_transforms : int, default=6
        Number of affine coupling layers.
    hidden_units : int, default=64
        Width of each coupling layer's conditioner MLP (two hidden layers).
    penalty_weight : float, default=1.0
        Weight of the IMA penalty, per feature, against the negative
        log-likelihood per feature.  ``0`` turns the regularizer off.
    penalty_columns : int, default=8
        Jacobian columns per step for the penalty: exact when the data have
        at most this many features, else an unbiased column-sampled estimate.
    penalty_rows : int, default=32
        Rows of each batch on which the penalty is evaluated (an unbiased
        estimate of its batch mean at a fixed cost: each column costs one
        Jacobian-vector product through the flow).
    n_pure_sources : int, "all" or None, default=None
        ``None``: decided from the training rows by the noise-floor rule
        (see ``split_ratio`` and :func:`nrad.sources.split_sources`).
        ``"all"``: no noise sources.  An int: that many most influential
        sources are pure.
    split_ratio : float, default=3.0
        The noise-floor rule marks a flat floor of weak sources as noise only
        when a gap of at least this factor in Jacobian column norm separates
        it from the rest.
    max_epochs : int or None, default=None
        Upper bound on training epochs.  ``None``: enough epochs for about
        1,000 gradient steps, between 20 and 1,000 epochs, but never more
        than 4,000 steps (tables above ~51,000 rows get fewer than 20).
    batch_size : int, default=256
    learning_rate : float, default=1e-3
        Adam learning rate.  Halved on a retry if training diverges.
    weight_decay : float, default=1e-5
    train_noise : float, default=0.05
        Standard deviation (in standardized units) of Gaussian noise added
        to training batches.  It dequantizes discrete features, whose
        likelihood a flow can otherwise raise without bound by collapsing
        onto their values (held-out likelihood then explodes).
    validation_fraction : float, default=0.1
        Part of the training rows held out for early stopping (ignored when
        it would hold fewer than 20 rows: then all epochs run on all rows).
    n_iter_no_change : int, default=10
        Epochs without improvement of the held-out loss before stopping.
    tol : float or "auto", default=1e-4
        Smallest decrease of the held-out loss (nats per feature) that counts
        as an improvement.  ``"auto"``: one standard error of the held-out
        loss itself (its rows' spread over the square root of their count),
        so training stops once what it gains is within the noise of measuring
        it.  Faster, but it stops the flows before they have learnt what sets
        anomalies apart (on the benchmark tables its flows rank them worse;
        docs/method.md); not the default anywhere.
    patience_steps : int, default=0
        Stop no earlier than this many gradient steps without improvement
        either (on small tables an epoch is a few steps).  ``500`` lets the
        flow move off its Gaussian start on small noisy tables, but barely
        moves the benchmark's AUROC, fits mid-sized tables several times
        slower and sharpens the fit on discrete columns, which makes
        explanations of extreme rows erratic; not the default
        (research/notes.md section 10).
    contamination : float, default=0.1
        Expected share of outliers in the training rows; sets ``offset_``.
    calibration_fraction : float, default=0.0
        Part of the training rows held out of training entirely and scored
        afterwards, for conformal p-values (:meth:`p_values`).  ``0``: no
        calibration rows (all rows train the flow; ``p_values`` then raises).
        The command line uses 0.2.
    latent_tail : float or None, default=None
        When scoring, the base density's tails beyond this many latent sd
        are exponential instead of Gaussian (training is unchanged): a
        cautious extrapolation where the flow saw few rows (see
        :func:`nrad.flow.base_logpdf`).  ``None``: Gaussian throughout.
        The table model (:func:`nrad.table.fit_table`) uses 4.
    random_state : int, RandomState instance or None, default=None
        Seeds weight init, permutations, batching and column sampling.
    verbose : bool, default=False
        Show a progress bar over epochs.

    Attributes
    ----------
    flow_ : CouplingFlow
        The trained flow (float64 for scoring).
    mean_, scale_ : ndarray of shape (n_features_in_,)
        Standardization learned from the training rows.
    source_influence_ : ndarray of shape (n_features_in_,)
        Mean log Jacobian column norm of each source over training rows.
    pure_sources_, noise_sources_ : ndarray of int
        Indices of the pure and the noise sources.
    calibration_scores_ : ndarray
        Anomaly scores of the calibration rows (empty without them).
    offset_ : float
        ``score_samples`` percentile at ``100 * contamination`` on the
        training rows; ``decision_function = score_samples - offset_``.
    n_epochs_ : int
        Epochs actually run.
    loss_curve_, validation_loss_curve_ : list of float
        Mean training (and held-out) loss per epoch.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when fitted on a DataFrame with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from nrad import NRDE
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> det = NRDE(max_epochs=5, random_state=0).fit(X)
    >>> det.anomaly_score(X).shape
    (200,)
    """

    _parameter_constraints: dict = {
        "n_transforms": [Interval(Integral, 1, None, closed="left")],
        "hidden_units": [Interval(Integral, 1, None, closed="left")],
        "penalty_weight": [Interval(Real, 0, None, closed="left")],
        "penalty_columns": [Interval(Integral, 1, None, closed="left")],
        "penalty_rows": [Interval(Integral, 1, None, closed="left")],
        "train_noise": [Interval(Real, 0, None, closed="left")],
        "n_pure_sources": [Interval(Integral, 1, None, closed="left"), StrOptions({"all"}), None],
        "split_ratio": [Interval(Real, 1, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "patience_steps": [Interval(Integral, 0, None, closed="left")],
        "contamination": [Interval(Real, 0, 0.5, closed="right")],
        "calibration_fraction": [Interval(Real, 0, 1, closed="left")],
        "latent_tail": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["boolean"],
    }

    def __init__(
        self,
        *,
        n_transforms: int = 6,
        hidden_units: int = 64,
        penalty_weight: float = 1.0,
        penalty_columns: int = 8,
        penalty_rows: int = 32,
        n_pure_sources: int | str | None = None,
        split_ratio: float = 3.0,
        max_epochs: int | None = None,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-5,
        train_noise: float = 0.05,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float | str = 1e-4,
        patience_steps: int = 0,
        contamination: float = 0.1,
        calibration_fraction: float = 0.0,
        latent_tail: float | None = None,
        random_state: Any = None,
        verbose: bool = False,
    ) -> None:
        self.n_transforms = n_transforms
        self.hidden_units = hidden_units
        self.penalty_weight = penalty_weight
        self.penalty_columns = penalty_columns
        self.penalty_rows = penalty_rows
        self.n_pure_sources = n_pure_sources
        self.split_ratio = split_ratio
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.train_noise = train_noise
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.patience_steps = patience_steps
        self.contamination = contamination
        self.calibration_fraction = calibration_fraction
        self.latent_tail = latent_tail
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: Any, y: Any = None) -> NRDE:
        """Fit the flow, measure source influence, split the sources.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (believed normal, or mostly normal).
        y : ignored

        Returns
        -------
        self
        """
        fit_together([self], [X])
        return self

    def predict(self, X: Any) -> np.ndarray:
        """+1 for inliers, -1 for outliers (below ``offset_``)."""
        return np.where(self.decision_function(X) < 0, -1, 1)

    def decision_function(self, X: Any) -> np.ndarray:
        """``score_samples(X) - offset_``: negative for outliers."""
        return self.score_samples(X) - self.offset_

    def score_samples(self, X: Any) -> np.ndarray:
        """Pure-data log density (higher = more normal), sklearn's convention."""
        return self.log_density(X)

    def anomaly_score(self, X: Any) -> np.ndarray:
        """Anomaly score: the negative pure-data log density (higher = more anomalous)."""
        return -self.log_density(X)

    def log_density(self, X: Any) -> np.ndarray:
        """Log density of each row's pure data on the pure-source manifold.

        In standardized units; with no noise sources it is the flow's full
        log density.
        """
        return self._log_density_standardized(self._standardize(X))

    def _log_density_standardized(self, Z: torch.Tensor) -> np.ndarray:
        noise = tuple(int(i) for i in self.noise_sources_)
        kernel = ScoringKernel.of(self.flow_)
        return map_chunks(Z, lambda z: kernel.pure_log_density(z, noise, self.latent_tail))

    def p_values(self, X: Any) -> np.ndarray:
        """p-values of each row against the calibration rows (conformal, with a fitted tail).

        Small p-values mean "unlike the normal rows".  Valid when the
        calibration rows and normal new rows are exchangeable, and in the
        tail as far as its model holds; see :mod:`nrad.calibration`.
        """
        check_is_fitted(self)
        if len(self.calibration_scores_) == 0:
            raise NradError(
                "p_values needs calibration rows: fit NRDE with calibration_fraction > 0 (e.g. 0.2)"
            )
        return TailModel.fit(self.calibration_scores_).p_values(self.anomaly_score(X))

    def explain(self, X: Any, n_steps: int = 16, baseline: Any = None) -> np.ndarray:
        """Per-feature contributions to each row's anomaly score.

        Integrated gradients (Sundararajan et al., 2017) of the anomaly score
        along the straight path from ``baseline`` (default: the training
        mean) to the row, in standardized units: contribution ``j`` is
        ``(z_j - b_j) * mean_t d score / d z_j (b + t (z - b))``.  The
        contributions of a row add up to its score minus the baseline's
        score, a feature equal to its baseline value contributes nothing,
        and a change along a noise source contributes nothing (the
        pure-data score does not move).  See docs/method.md.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)
        n_steps : int
            Points on the path (midpoint rule).
        baseline : array-like of shape (n_features_in_,), optional
            The reference row, in the units of ``X``.

        Returns
        -------
        ndarray of shape (n_samples, n_features_in_)
        """
        Z = self._standardize(X)
        base = self._standardize(np.reshape(self.mean_ if baseline is None else baseline, (1, -1)))
        noise = tuple(int(i) for i in self.noise_sources_)
        steps = (torch.arange(n_steps, dtype=torch.float64) + 0.5) / n_steps
        chunk = max(1, SCORE_CHUNK // n_steps)

        def attribute(z: torch.Tensor) -> torch.Tensor:
            delta = z - base
            path = (base + steps[:, None, None] * delta[None]).reshape(-1, z.shape[1]).requires_grad_(True)
            score = -pure_log_density(self.flow_, path, noise, self.latent_tail)
            (grad,) = torch.autograd.grad(score.sum(), path)
            return grad.reshape(n_steps, *z.shape).mean(dim=0) * delta

        chunks = [Z[start : start + chunk] for start in range(0, Z.shape[0], chunk)]
        return torch.cat(run_chunks(chunks, attribute, grad=True)).detach().numpy()

    def transform(self, X: Any) -> np.ndarray:
        """The estimated sources ``s = f(x)`` of each row, shape (n, n_features_in_)."""
        kernel = ScoringKernel.of(self.flow_)
        return map_chunks(self._standardize(X), lambda z: kernel.sources(z)[0])

    # -- helpers ---------------------------------------------------------

    def _standardize(self, X: Any) -> torch.Tensor:
        check_is_fitted(self)
        return self._standardize_array(validate_data(self, X, dtype=np.float64, reset=False))

    def _standardize_array(self, X: np.ndarray) -> torch.Tensor:
        Z = np.clip((X - self.mean_) / self.scale_, -MAX_ABS_Z, MAX_ABS_Z)
        return torch.as_tensor(Z, dtype=torch.float64)

    def _split_sources(self, Z: torch.Tensor, rng: np.random.Generator) -> None:
        n_rows = min(INFLUENCE_ROWS, max(50, INFLUENCE_CELLS // Z.shape[1]))
        if self.n_pure_sources == "all":
            # No split to decide: the influences only describe the sources (the report shows them).
            n_rows = min(n_rows, DESCRIBE_INFLUENCE_ROWS)
        rows = rng.permutation(Z.shape[0])[:n_rows]
        # One torch thread, as in training: a few hundred rows through 64-unit layers split over
        # two threads took 8.7 s beside a busy process (0.05 s on one) for a 300-row table.
        with torch.inference_mode(), one_torch_thread():
            s, _ = self.flow_(Z[np.sort(rows)])
            gen = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))
            self.source_influence_ = source_influence(self.flow_, s, gen)
        split = split_sources(self.source_influence_, self.n_pure_sources, self.split_ratio)
        self.pure_sources_ = np.asarray(split.pure, dtype=np.int64)
        self.noise_sources_ = np.asarray(split.noise, dtype=np.int64)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The fitted detector as JSON-able parameters and named arrays (the flow's weights among them)."""
        check_is_fitted(self, "flow_")
        arrays = {
            f"{prefix}flow.{name}": v.detach().cpu().numpy() for name, v in self.flow_.state_dict().items()
        }
        arrays.update({f"{prefix}{a}": np.asarray(getattr(self, a)) for a in _LEARNED_ARRAYS})
        params = {
            # A RandomState object cannot travel; the fitted detector no longer needs it.
            k: None if isinstance(v, np.random.RandomState) else v
            for k, v in self.get_params().items()
        }
        learned = {
            "offset_": float(self.offset_),
            "n_epochs_": int(self.n_epochs_),
            "n_features_in_": int(self.n_features_in_),
        }
        return {"params": params, "learned": learned}, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str, d: int) -> NRDE:
        """Rebuild from :meth:`to_state`; refuse a detector that does not take ``d`` features."""
        params, learned = meta["params"], meta["learned"]
        det = cls(**params)
        if int(learned["n_features_in_"]) != d:
            raise ValueError(f"{prefix}: the flow takes {learned['n_features_in_']} features, expected {d}")
        flow = CouplingFlow(
            d, int(params["n_transforms"]), int(params["hidden_units"]), np.random.default_rng(0), np.eye(d)
        )
        flow_prefix = f"{prefix}flow."
        state = {
            name[len(flow_prefix) :]: torch.as_tensor(v)
            for name, v in arrays.items()
            if name.startswith(flow_prefix)
        }
        flow.load_state_dict(state, strict=True)
        det.flow_ = flow.double().eval()
        for a in _LEARNED_ARRAYS:
            setattr(det, a, np.asarray(arrays[f"{prefix}{a}"]))
        for a in ("mean_", "scale_"):
            if getattr(det, a).shape != (d,):
                raise ValueError(f"{prefix}{a} has shape {getattr(det, a).shape}, expected ({d},)")
        det.offset_ = float(learned["offset_"])
        det.n_epochs_ = int(learned["n_epochs_"])
        det.n_features_in_ = d
        return det


#: The learned arrays a saved detector carries besides its flow.
_LEARNED_ARRAYS = (
    "mean_",
    "scale_",
    "source_influence_",
    "pure_sources_",
    "noise_sources_",
    "calibration_scores_",
)


def fit_together(
    estimators: list[NRDE], Xs: list[Any], validation: list[np.ndarray | None] | None = None
) -> list[NRDE]:
    """Fit several NRDE estimators at once, each on its own rows (their flows stacked: nrad.training).

    The estimators must agree in every training parameter but ``random_state``.
    ``validation[k]``: held-out rows (in ``Xs[k]``'s units) that stop estimator
    ``k``'s training early instead of a ``validation_fraction`` of its own rows
    (the table model passes each flow the cross-fitting fold it does not see).
    Each estimator ends up as if fitted alone, except that its flow shares its
    coupling permutations with the first one's.
    """
    if not estimators:
        return estimators
    first = estimators[0]
    keys = ("n_transforms", "hidden_units", "batch_size", "learning_rate", "weight_decay", "train_noise",
            "penalty_weight", "penalty_columns", "penalty_rows", "max_epochs", "n_iter_no_change", "tol",
            "patience_steps", "validation_fraction")  # fmt: skip
    for est in estimators:
        est._validate_params()
        if any(getattr(est, k) != getattr(first, k) for k in keys):
            raise ValueError("estimators fitted together must share their training parameters")
    parts = []
    for k, (est, X) in enumerate(zip(estimators, Xs, strict=True)):
        X = validate_data(est, X, dtype=np.float64, ensure_min_samples=2)
        rng = np.random.default_rng(check_random_state(est.random_state).randint(2**31 - 1))
        X, X_calib = _calibration_split(X, est.calibration_fraction, rng)
        est.mean_, est.scale_ = standardization(X)
        held = None if validation is None else validation[k]
        held = None if held is None else (np.asarray(held, dtype=np.float64) - est.mean_) / est.scale_
        parts.append(_Part(X, X_calib, (X - est.mean_) / est.scale_, held, int(rng.integers(2**31 - 1)), rng))
    if any(p.Z.shape[1] != parts[0].Z.shape[1] for p in parts):
        raise ValueError("estimators fitted together must have the same number of features")
    lr = first.learning_rate
    for _ in range(3):
        try:
            flows, result = _train_stack(first, parts, lr)
            break
        except FitDivergedError:
            # A diverged fit (non-finite loss) is retried from scratch with a smaller learning
            # rate; heavy tails occasionally need it.
            lr /= 4.0
    else:
        raise FitDivergedError(
            "NRDE training diverged three times (learning rates down to "
            f"{lr * 4:.2g}). Check the data for extreme values or lower learning_rate."
        )
    for k, (est, flow, part) in enumerate(zip(estimators, flows, parts, strict=True)):
        X, X_calib = part.X, part.X_calib
        est.flow_ = flow.double().eval()
        est.n_epochs_ = result.n_epochs[k]
        est.loss_curve_, est.validation_loss_curve_ = result.loss_curves[k], result.validation_curves[k]
        est._split_sources(torch.as_tensor(part.Z, dtype=torch.float64), part.rng)
        # X is validated already: scored without a second validation (which, for a DataFrame
        # fitted with column names, would warn that this array has none).
        density = est._log_density_standardized
        est.offset_ = float(np.percentile(density(est._standardize_array(X)), 100.0 * est.contamination))
        est.calibration_scores_ = -density(est._standardize_array(X_calib)) if len(X_calib) else np.zeros(0)
    return estimators


@dataclass
class _Part:
    """One estimator's rows while several are fitted together."""

    X: np.ndarray
    X_calib: np.ndarray
    Z: np.ndarray  # standardized training rows
    held: np.ndarray | None  # standardized held-out rows given by the caller
    seed: int  # of the flow's start and its training's random draws
    rng: np.random.Generator  # what follows the fit (source influence)


def _train_stack(first: NRDE, parts: list[_Part], lr: float) -> tuple[list[CouplingFlow], Any]:
    """One attempt: build each flow from its seed (PCA-whitening start) and train them stacked."""
    from nrad.training import TrainConfig, as_float32, shared_permutations, train_stacked

    flows, train, held = [], [], []
    gen_seed = None
    for part in parts:
        rng = np.random.default_rng(part.seed)
        seed = int(rng.integers(2**31 - 1))
        gen_seed = seed if gen_seed is None else gen_seed
        if part.held is None:
            rows, val = _holdout(len(part.Z), first.validation_fraction, rng)
            train.append(part.Z[rows])
            held.append(None if val is None else part.Z[val])
        else:
            train.append(part.Z)
            # A held-out loss of this many rows is precise enough to stop on (its standard error,
            # the stopping tolerance with tol="auto", is a few thousandths of a nat per feature).
            step = -(-len(part.held) // MAX_HELD_ROWS)
            held.append(part.held[::step])
        whitening = _pca_whitening(train[-1], first.train_noise)
        d = part.Z.shape[1]
        flows.append(CouplingFlow(d, first.n_transforms, first.hidden_units, rng, linear_init=whitening))
    shared_permutations(flows)
    batch = min(first.batch_size, min(len(t) for t in train))
    steps_per_epoch = math.ceil(max(len(t) for t in train) / batch)
    config = TrainConfig(
        batch_size=first.batch_size, learning_rate=lr, weight_decay=first.weight_decay,
        train_noise=first.train_noise, penalty_weight=first.penalty_weight,
        penalty_columns=first.penalty_columns, penalty_rows=first.penalty_rows,
        penalty_every=PENALTY_EVERY, epochs=first.max_epochs or _auto_epochs(steps_per_epoch),
        patience=max(first.n_iter_no_change, math.ceil(first.patience_steps / steps_per_epoch)),
        tol=first.tol,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(gen_seed)
    # One torch thread: the layers are too narrow for intra-op threads to pay, and threads
    # that wait for a busy core slow every step (nrad.threads).
    with one_torch_thread():
        result = train_stacked(
            flows, [as_float32(t) for t in train], [None if h is None else as_float32(h) for h in held],
            config, gen, lr, epochs=lambda n: _epochs(n, first.verbose),
        )  # fmt: skip
    return flows, result


def _epochs(n: int, verbose: bool) -> Any:
    if not verbose:
        return range(n)
    from tqdm.auto import trange

    # delay: the bar appears only for fits longer than a couple of seconds;
    # disable=None: only on a terminal (a log file gets no carriage-return soup).
    return trange(n, desc="NRDE fit", unit="epoch", leave=False, delay=2.0, disable=None)


def _calibration_split(
    X: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Rows to train on and rows held out for calibration (never trained on)."""
    n_cal = int(round(fraction * len(X)))
    if n_cal == 0:
        return X, X[:0]
    if len(X) - n_cal < 2:
        raise NradError(f"calibration_fraction={fraction} leaves fewer than 2 of {len(X)} rows to train on")
    perm = rng.permutation(len(X))
    return X[np.sort(perm[n_cal:])], X[np.sort(perm[:n_cal])]


def _pca_whitening(Z: np.ndarray, noise: float) -> np.ndarray:
    """PCA whitening ``diag(1/sigma) U^T`` of the (noised) training rows.

    The generator of this linear map, ``U diag(sigma)``, has orthogonal
    columns, so the flow starts where the IMA penalty is zero and the column
    norms are the principal standard deviations.  The training noise adds
    ``noise^2`` to every eigenvalue (exactly, as it is isotropic), which also
    keeps collinear directions invertible; a tiny floor covers ``noise = 0``.
    """
    # One BLAS thread: with more, the covariance and eigh sum in an order that
    # depends on the thread count (1e-12 apart at d = 100), and training
    # amplifies that, so the same seed would fit differently on machines with
    # different core counts.
    with threadpool_limits(1):
        cov = np.atleast_2d(np.cov(Z, rowvar=False, bias=True)) if len(Z) > 1 else np.eye(Z.shape[1])
        eigval, eigvec = np.linalg.eigh(cov)
    order = np.argsort(eigval)[::-1]
    sigma = np.sqrt(np.maximum(eigval[order], 0.0) + noise**2 + 1e-6)
    # Fix each eigenvector's sign so the init does not depend on LAPACK's choice.
    vecs = eigvec[:, order]
    vecs = vecs * np.where(vecs[np.abs(vecs).argmax(axis=0), np.arange(vecs.shape[1])] < 0, -1.0, 1.0)
    return (vecs / sigma).T


def _auto_epochs(steps_per_epoch: int) -> int:
    """Epochs for about ``STEP_BUDGET`` steps, at least 20 (so early stopping has
    epochs to compare) unless that would exceed 4x the budget (large tables
    would otherwise take many times the budget), at most 1,000."""
    budget = math.ceil(STEP_BUDGET / steps_per_epoch)
    floor = min(20, math.ceil(4 * STEP_BUDGET / steps_per_epoch))
    return int(min(max(budget, floor), 1000))


def _holdout(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    n_val = int(round(fraction * n))
    if n_val < MIN_VALIDATION_ROWS:
        return np.arange(n), None
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])
