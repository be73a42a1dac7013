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
import torch
from safetensors.numpy import load as load_tensors
from safetensors.numpy import save as save_tensors

from nrad import __version__
from nrad.calibration import TailModel
from nrad.categories import CategoryModel
from nrad.detector import NRDE
from nrad.errors import NradError
from nrad.flow import CouplingFlow
from nrad.fusion import Fusion
from nrad.io import atomic_path
from nrad.preprocess import TableSchema
from nrad.scaler import NumericScaler
from nrad.table import TableModel

FORMAT = "nrad-model"
#: Version 3 added the fused score's members (``fusion``); version 2 files (the density alone) still load.
FORMAT_VERSION = 3
READS_VERSIONS = (2, 3)
MANIFEST, TENSORS = "manifest.json", "tensors.safetensors"
MAX_MANIFEST_BYTES = 16 * 2**20
MAX_TENSOR_BYTES = 2 * 2**30
ARRAYS = ("mean_", "scale_", "source_influence_", "pure_sources_", "noise_sources_", "calibration_scores_")


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
        tensors.update(
            {f"flow{k}.{name}": v.detach().cpu().numpy() for name, v in det.flow_.state_dict().items()}
        )
        tensors.update({f"detector{k}.{a}": np.asarray(getattr(det, a)) for a in ARRAYS})
        detectors.append({
            "params": _json_params(det.get_params()),
            "learned": {a: getattr(det, a) for a in ("offset_", "n_epochs_", "n_features_in_")},
        })  # fmt: skip
    categories, cat_arrays = model.categories.to_state("categories.")
    scaler, scaler_arrays = model.scaler.to_state("scaler.")
    tensors.update(cat_arrays)
    tensors.update(scaler_arrays)
    fusion = None
    if model.fusion is not None:
        fusion, fusion_arrays = model.fusion.to_state("fusion.")
        tensors.update(fusion_arrays)
    tail = None
    if model.tail is not None:
        t = model.tail
        tensors.update({"tail.scores": t.scores, "tail.shapes": t.shapes, "tail.scales": t.scales,
                        "tail.weights": t.weights})  # fmt: skip
        tail = {"threshold": t.threshold, "n_tail": t.n_tail}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "nrad_version": __version__,
        "schema": model.schema.to_dict(),
        "categories": categories,
        "scaler": scaler,
        "detectors": detectors,
        "fusion": fusion,
        "tail": tail,
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
    scaler = NumericScaler.from_state(manifest["scaler"], tensors, "scaler.")
    if categories.n_features != len(schema.categorical_names) + _n_indicators(schema):
        raise ValueError(
            f"category model has {categories.n_features} features, the schema makes a different number"
        )
    if scaler.n_features != len(schema.numeric_names):
        raise ValueError(
            f"scaler has {scaler.n_features} features, the schema makes {len(schema.numeric_names)}"
        )
    detectors = [
        _rebuild_detector(spec, tensors, k, scaler.n_features) for k, spec in enumerate(manifest["detectors"])
    ]
    fusion = None
    if manifest.get("fusion") is not None:
        fusion = Fusion.from_state(manifest["fusion"], tensors, "fusion.", len(detectors), scaler.n_features)
    tail = None
    if manifest["tail"] is not None:
        t = manifest["tail"]
        arrays = [
            np.asarray(tensors[f"tail.{a}"], dtype=np.float64)
            for a in ("scores", "shapes", "scales", "weights")
        ]
        if not arrays[1].shape == arrays[2].shape == arrays[3].shape or np.any(arrays[2] <= 0):
            raise ValueError("the calibration tail's shapes, scales and weights do not match")
        tail = TailModel(arrays[0], float(t["threshold"]), int(t["n_tail"]), *arrays[1:])
    return TableModel(schema, categories, scaler, detectors, tail, manifest.get("id_column"),
                      list(manifest.get("ignore", [])), manifest.get("info", {}), fusion)  # fmt: skip


def _rebuild_detector(spec: dict[str, Any], tensors: dict[str, np.ndarray], k: int, d: int) -> NRDE:
    params = spec["params"]
    det = NRDE(**params)
    learned = spec["learned"]
    if int(learned["n_features_in_"]) != d:
        raise ValueError(f"flow {k} takes {learned['n_features_in_']} features, the scaler makes {d}")
    flow = CouplingFlow(
        d, int(params["n_transforms"]), int(params["hidden_units"]), np.random.default_rng(0), np.eye(d)
    )
    prefix = f"flow{k}."
    state = {
        name[len(prefix) :]: torch.as_tensor(v) for name, v in tensors.items() if name.startswith(prefix)
    }
    flow.load_state_dict(state, strict=True)
    det.flow_ = flow.double().eval()
    for a in ARRAYS:
        setattr(det, a, np.asarray(tensors[f"detector{k}.{a}"]))
    for a in ("mean_", "scale_"):
        if getattr(det, a).shape != (d,):
            raise ValueError(f"{a} has shape {getattr(det, a).shape}, expected ({d},)")
    det.offset_ = float(learned["offset_"])
    det.n_epochs_ = int(learned["n_epochs_"])
    det.n_features_in_ = d
    return det


def _n_indicators(schema: TableSchema) -> int:
    return sum(1 for c in schema.numeric_sources if schema.columns[c].kind == "numeric")


def _json_params(params: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        if isinstance(v, np.random.RandomState):
            v = None  # a RandomState object cannot travel; the fitted model no longer needs it
        out[k] = v
    return out


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in the manifest")
