"""The ``.nrad`` model file: a zip with a JSON manifest and safetensors tensors.

No unpickling, ever: loading parses JSON and safetensors only, so a file from a
stranger cannot run code.  Loading refuses anything unexpected: other member
names (including path-traversal names), declared sizes above the limits,
members that decompress to more than they declare, another format version,
tensors whose names, dtypes or shapes do not match the manifest.  Nothing is
ever extracted to disk.

A fused model (the default, :mod:`nrad.fusion`) holds the numbers of up to
``MAX_REFERENCE_ROWS`` training rows per fold, standardized as the flows
read them: the neighbour score needs them.  A model fitted with
``detector="nrde"`` holds no training rows (docs/reliability.md).
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as load_tensors
from safetensors.numpy import save as save_tensors

from nrad import __version__
from nrad.categories import CategoryModel
from nrad.cells import Bands, CellSegments, Walls
from nrad.errors import NradError
from nrad.evidence import ChannelTails
from nrad.fusion import Fusion
from nrad.gaussian import Relations, RobustGaussian
from nrad.identities import Identities
from nrad.io import atomic_path
from nrad.nrde import NRDE
from nrad.numeric import NumericModel
from nrad.preprocess import TableSchema
from nrad.table import MAX_CELL_FEATURES, TableModel

FORMAT = "nrad-model"
#: Version 25: a band may be vouched for by a partner column whose far values go with it
#: (``bands.partner``, ``bands.partner_side``, ``bands.partner_bound``: a ranch's herd with its
#: land); a file of version 9 to 24 still reads, its bands without partners.
#: Version 24: a numeric column written with its unit ("70.5 kg") or on a clock ("0:31:48") keeps how
#: it is written (``units``, ``unit``, ``clock`` of its plan in the schema), and a datetime may be
#: numbers counted since 1970 (format ``epoch:s`` and the like); a file of version 9 to 23 still
#: reads, its columns read as before.
#: Version 23: the cell tests say which numeric columns have their lowest values read in ratios
#: (``ratios``: a price of 1 where the cheapest was 300); a file of version 9 to 22 still reads, and
#: reads every column's lower side as shaped.
#: Version 22: an identity may hold between whole numbers read as exact (form ``whole``: a count
#: that is the sum of others); a file of version 9 to 21 still reads, without them.
#: Version 21: the walls say which numeric columns hold times of day written HHMM (``clock``): a
#: value no such time is outside the column's support; a file of version 9 to 20 still reads, and
#: reads no column as one.
#: Version 20: a datetime column after another is read as the time since it (the schema's ``after``
#: and ``after_unit``); a file of version 9 to 19 reads each datetime by its hour and weekday alone.
#: Version 19: the fusion names each of its reference rows once, as (fold, row) pairs
#: (``fusion.everyone``): new rows' neighbours are sought among them all; a file of version 9 to 18
#: still reads, and its new rows take the mean over the folds' references (as its tails were fitted).
#: Version 18: the walls keep the farthest training value at or beyond each wall (``seen_low`` and
#: the like), which new rows are read against; a file of version 9 to 17 still reads, and reads
#: new rows against the walls themselves.
#: Version 17: the bands of numeric columns the table vouches for (``bands``) and how the row
#: tails read their rows (``tails.row_bands`` and the like); a file of version 9 to 16 still
#: reads, without them.
#: Version 16: the walls keep a value on the lattice of each column of a few values, each a step from
#: the next (``lattice_base``): a value off its steps is outside the column's support; a file of
#: version 9 to 15 still reads, without them.
#: Version 15: an identity may be a product with whole-number factors read as exact (form
#: ``counts``), over all rows or within each level of a category; a file of version 9 to 14 still
#: reads, without them.
#: Version 14: category levels whose rows share a value far out in a numeric column
#: (``cell_segments``); a file of version 9 to 13 still reads, without them.
#: Version 13: a datetime column keeps the range of its training dates (``date_range``), beyond
#: which a date is outside its support, and a tail says whether the counts of its calibration
#: scores floor its p-values (``floor``); a file of version 9 to 12 still reads, without either.
#: Version 12: the category model says how a pair never seen shares the discounted mass
#: (``backoff``: by the pairs seen once per child code); a file of version 9 to 11 still reads,
#: and shares it by the marginal counts, as before.
#: Version 11: the numeric model keeps how many values each category level's spread was read
#: from (``level_rows``, ``fallback_rows``); a file of version 9 or 10 still reads, and scores new
#: rows as before.
#: Version 10: exact relations between the numbers (``identities``); a version 9 file, which has
#: none, still reads.
#: Version 9: the numeric model keeps how many values each feature was read from (``n_values``).
#: Version 8: a third test per numeric cell, its value in its column (``column_upper``, ``column_lower``).
#: Version 7: the Gaussians cells' residuals are read from (``relations``, one set per reading).
#: Version 6: every part saves itself (a detector's flow weights under its own prefix).
#: Version 5: the channels' tails together (the anomaly score, the density, the robust distance,
#: each cell tested by its residual and by its value in context), lattice walls, the robust
#: Gaussian's sparse columns (p-values of earlier versions were calibrated differently: those
#: files must be refitted).
FORMAT_VERSION = 25
READS_VERSIONS = (9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25)
MANIFEST, TENSORS = "manifest.json", "tensors.safetensors"
MAX_MANIFEST_BYTES = 16 * 2**20
MAX_TENSOR_BYTES = 2 * 2**30


class ModelFileError(NradError):
    """A model file that cannot be trusted or read."""


def save_model(model: TableModel, path: str | Path) -> Path:
    """Write ``model`` to ``path`` atomically (temp file, then rename)."""
    path = Path(path)
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        _write_zip(model, fh)
    return path


def model_to_bytes(model: TableModel) -> bytes:
    """The bytes of the ``.nrad`` file for ``model`` (what :mod:`nrad.distributed` ships to workers)."""
    buffer = io.BytesIO()
    _write_zip(model, buffer)
    return buffer.getvalue()


def model_from_bytes(data: bytes, name: str = "<model bytes>") -> TableModel:
    """Load a model from ``.nrad`` file bytes, with the same checks as :func:`load_model`."""
    return _load(io.BytesIO(data), Path(name))


def _write_zip(model: TableModel, fh: Any) -> None:
    tensors: dict[str, np.ndarray] = {}
    detectors = []
    for k, det in enumerate(model.detectors):
        meta, arrays = det.to_state(f"detector{k}.")
        detectors.append(meta)
        tensors.update(arrays)
    categories, cat_arrays = model.categories.to_state("categories.")
    numeric, numeric_arrays = model.numeric.to_state("numeric.")
    tensors.update(cat_arrays)
    tensors.update(numeric_arrays)
    fusion = None
    if model.fusion is not None:
        fusion, fusion_arrays = model.fusion.to_state("fusion.")
        tensors.update(fusion_arrays)
    tails = None
    if model.tails is not None:
        tails, arrays = model.tails.to_state()
        tensors.update(arrays)
    gaussians = []
    for k, gaussian in enumerate(model.gaussians):
        meta, arrays = gaussian.to_state(f"gaussian{k}.")
        gaussians.append(meta)
        tensors.update(arrays)
    relations = []
    for k, part in enumerate(model.relations):
        meta, arrays = part.to_state(f"relations{k}.")
        relations.append(meta)
        tensors.update(arrays)
    if model.walls is not None:
        tensors.update(model.walls.to_state("walls."))
    if model.identities is not None:
        tensors.update(model.identities.to_state("identities."))
    if model.cell_segments is not None:
        tensors.update(model.cell_segments.to_state("cell_segments."))
    if model.bands is not None:
        tensors.update(model.bands.to_state("bands."))
    if model.basis is not None:
        tensors["basis"] = model.basis
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "nrad_version": __version__,
        "schema": model.schema.to_dict(),
        "categories": categories,
        "numeric": numeric,
        "detectors": detectors,
        "fusion": fusion,
        "tails": tails,
        "gaussians": gaussians,
        "relations": relations,
        "residual_variance": model.residual_variance,
        "id_column": model.id_column,
        "ignore": model.ignore,
        "info": model.info,
        "tensors": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in tensors.items()},
    }
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, json.dumps(manifest, indent=1, default=_json_default))
        zf.writestr(TENSORS, save_tensors(tensors))


def load_model(path: str | Path) -> TableModel:
    """Read a ``.nrad`` file, refusing anything it does not expect."""
    return _load(Path(path), Path(path))


def _load(source: Path | io.BytesIO, path: Path) -> TableModel:
    manifest, tensors = _read_members(source, path)
    _check_manifest(manifest, tensors, path)
    try:
        return _rebuild(manifest, tensors)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelFileError(
            f"{path}: the model does not fit together ({exc}); the file is damaged or tampered"
        ) from exc


def _read_members(source: Path | io.BytesIO, path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        zf = zipfile.ZipFile(source)
    except FileNotFoundError as exc:
        raise ModelFileError(f"model file {path} does not exist") from exc
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFileError(
            f"{path} is not an nrad model file (not a readable zip: {exc}); truncated?"
        ) from exc
    with zf:
        names = zf.namelist()
        if sorted(names) != sorted([MANIFEST, TENSORS]):
            raise ModelFileError(
                f"{path}: unexpected members {sorted(set(names) - {MANIFEST, TENSORS})} or missing "
                f"{sorted({MANIFEST, TENSORS} - set(names))}; refusing to load"
            )
        raw_manifest = _read_limited(zf, MANIFEST, MAX_MANIFEST_BYTES, path)
        raw_tensors = _read_limited(zf, TENSORS, MAX_TENSOR_BYTES, path)
    try:
        manifest = json.loads(raw_manifest.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: manifest is not valid JSON ({exc})") from exc
    try:
        tensors = load_tensors(raw_tensors)
    except Exception as exc:  # safetensors raises its own error types
        raise ModelFileError(f"{path}: tensors are not valid safetensors ({exc})") from exc
    return manifest, tensors


def _read_limited(zf: zipfile.ZipFile, name: str, limit: int, path: Path) -> bytes:
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise ModelFileError(
            f"{path}: member {name} declares {info.file_size} bytes, above the {limit} limit"
        )
    try:
        with zf.open(info) as f:
            data = f.read(limit + 1)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
        raise ModelFileError(f"{path}: member {name} is corrupt ({exc}); truncated or tampered file") from exc
    if len(data) > limit or len(data) != info.file_size:
        raise ModelFileError(f"{path}: member {name} does not decompress to its declared size")
    return data


def _check_manifest(manifest: Any, tensors: dict[str, np.ndarray], path: Path) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an nrad model manifest")
    version = manifest.get("format_version")
    if version not in READS_VERSIONS:
        raise ModelFileError(
            f"{path}: model format version {version!r}, this nrad ({__version__}) reads versions "
            f"{', '.join(map(str, READS_VERSIONS))}; refit the model or use the nrad version that wrote it "
            f"({manifest.get('nrad_version', 'unknown')})"
        )
    declared = manifest.get("tensors")
    if not isinstance(declared, dict) or set(declared) != set(tensors):
        raise ModelFileError(f"{path}: tensors do not match the manifest's list")
    for name, spec in declared.items():
        arr = tensors[name]
        if list(arr.shape) != list(spec.get("shape", [])) or str(arr.dtype) != spec.get("dtype"):
            raise ModelFileError(
                f"{path}: tensor {name} has shape {list(arr.shape)} / {arr.dtype}, "
                f"manifest says {spec.get('shape')} / {spec.get('dtype')}"
            )


def _rebuild(manifest: dict[str, Any], tensors: dict[str, np.ndarray]) -> TableModel:
    schema = TableSchema.from_dict(manifest["schema"])
    categories = CategoryModel.from_state(manifest["categories"], tensors, "categories.")
    numeric = NumericModel.from_state(manifest["numeric"], tensors, "numeric.")
    if categories.n_features != len(schema.categorical_names) + _n_indicators(schema):
        raise ValueError(
            f"category model has {categories.n_features} features, the schema makes a different number"
        )
    if numeric.n_features != len(schema.numeric_names):
        raise ValueError(
            f"numeric model has {numeric.n_features} features, the schema makes {len(schema.numeric_names)}"
        )
    p = numeric.n_features
    basis = np.asarray(tensors["basis"], dtype=np.float64) if "basis" in tensors else None
    if basis is not None and (basis.ndim != 2 or basis.shape[0] != p or not np.isfinite(basis).all()):
        raise ValueError(f"the components basis must be finite, with a row per numeric feature ({p})")
    width = p if basis is None else basis.shape[1]
    detectors = [
        NRDE.from_state(spec, tensors, f"detector{k}.", width) for k, spec in enumerate(manifest["detectors"])
    ]
    n_folds = max(len(detectors), len(manifest["gaussians"]))
    fusion = None
    if manifest.get("fusion") is not None:
        fusion = Fusion.from_state(manifest["fusion"], tensors, "fusion.", n_folds, p)
    tails = None if manifest["tails"] is None else ChannelTails.from_state(manifest["tails"], tensors)
    gaussian_width = p if basis is None or p <= MAX_CELL_FEATURES else width
    gaussians = [
        RobustGaussian.from_state(meta, tensors, f"gaussian{k}.", gaussian_width)
        for k, meta in enumerate(manifest["gaussians"])
    ]
    relations = [
        Relations.from_state(meta, tensors, f"relations{k}.", p)
        for k, meta in enumerate(manifest["relations"])
    ]
    if tails is not None and tails.cells is not None and tails.cells.n_features != p:
        raise ValueError(
            f"cell tests are for {tails.cells.n_features} numeric features, the numeric model makes {p}"
        )
    floors = [] if tails is None else [tails.row_bands, tails.density_bands, tails.distance_bands]
    if any(floor is not None and (floor.columns >= p).any() for floor in floors):
        raise ValueError(f"band floors must name numeric features 0 to {p - 1}")
    walls = Walls.from_state(tensors, "walls.", p) if "walls.low" in tensors else None
    identities = (
        Identities.from_state(tensors, "identities.", p, [len(x) for x in schema.categorical_labels])
        if "identities.form" in tensors
        else None
    )
    cell_segments = (
        CellSegments.from_state(tensors, "cell_segments.", p, [len(x) for x in schema.categorical_labels])
        if "cell_segments.feature" in tensors
        else None
    )
    bands = Bands.from_state(tensors, "bands.", p) if "bands.feature" in tensors else None
    residual_variance = float(manifest["residual_variance"])
    if not residual_variance > 0:
        raise ValueError("the components' residual variance must be positive")
    return TableModel(
        schema, categories, numeric, detectors, tails, manifest.get("id_column"),
        list(manifest.get("ignore", [])), manifest.get("info", {}), fusion=fusion, gaussians=gaussians,
        relations=relations, basis=basis, residual_variance=residual_variance, walls=walls,
        identities=identities, cell_segments=cell_segments, bands=bands,
    )  # fmt: skip


def _n_indicators(schema: TableSchema) -> int:
    return sum(1 for c in schema.numeric_sources if schema.columns[c].kind == "numeric")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in the manifest")
