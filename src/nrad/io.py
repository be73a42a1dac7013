"""Readers and writers; every output is written to a temp file and renamed."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``path``; rename it onto ``path`` only on success.

    A crash or kill mid-write leaves no half file under the final name (the
    temp file may remain, named ``.<name>.*.tmp``, and is never read).  The
    file gets the permissions any new file of the user gets (0666 less the
    umask): it is created with ``os.open``, which applies the umask, not
    with ``tempfile.mkstemp``, which always makes it owner-only.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_table(path: str | Path) -> Any:
    """Read a CSV (delimiter sniffed, UTF-8) or Parquet file into a DataFrame.

    Errors name the file and, where known, the line or byte and what to do.
    """
    import pandas as pd

    path = _existing(path)
    if _is_parquet(path):
        return _read_parquet(path)
    options, grouped = _csv_options(path)
    with _csv_errors(path):
        df = pd.read_csv(path, **options)
    return _ungroup(df, grouped)


def iter_table(path: str | Path, batch_rows: int) -> Iterator[Any]:
    """Yield a CSV or Parquet table as DataFrames of at most ``batch_rows`` rows, in order.

    Parquet is read one record batch at a time (a directory: its ``*.parquet``
    files in natural name order, part.2 before part.10, as Dask and Spark
    write them); CSV in chunks.  Peak memory is one batch, whatever the size.
    """
    import pandas as pd

    path = _existing(path)
    if _is_parquet(path):
        for part in parquet_files(path):
            yield from _iter_parquet(part, batch_rows)
        return
    options, grouped = _csv_options(path)
    with _csv_errors(path):
        reader = pd.read_csv(path, chunksize=batch_rows, **options)
        with reader:
            for chunk in reader:
                yield _ungroup(chunk, grouped)


def _csv_options(path: Path) -> tuple[dict[str, Any], list[str]]:
    """How pandas reads the CSV ``path`` (its delimiter, UTF-8, the columns of thousands grouped by
    points as text), and those columns, for :func:`_ungroup`."""
    delimiter = csv_delimiter(path)
    grouped = grouped_thousands(path, delimiter)
    options = {
        "sep": delimiter,
        "encoding": "utf-8",
        "low_memory": False,
        "dtype": dict.fromkeys(grouped, str),
    }
    return options, grouped


#: Rows of a CSV read to decide how it writes its numbers (:func:`grouped_thousands`).
SNIFF_ROWS = 5000
#: An integer written with points between its groups of three digits: 45.011, 1.250.000.
_GROUPED = r"^[-+]?\d{1,3}(?:\.\d{3})+$"


def grouped_thousands(path: Path, delimiter: str) -> list[str]:
    """Columns of a CSV whose numbers are integers with points grouping their thousands (45.011,
    1.250.000, beside plain 839), in a file that writes its other numbers with a decimal comma
    (1.234,56 or 58,14 in some column): what a European spreadsheet exports.

    pandas reads such a column as decimals, 45.011 for forty-five thousand and eleven, and a
    column of small and large counts as numbers a thousand apart; its text is read instead, the
    points taken out (:func:`_ungroup`).  Without a decimal comma elsewhere in the file a lone
    ``45.011`` is a decimal, as most files write it.  The first ``SNIFF_ROWS`` rows decide.
    """
    import re

    import pandas as pd

    # A decimal comma is a digit, a comma and a digit inside a field: in a comma-separated file
    # only a quoted one.  Files without any are most files, and are read with no second look.
    with path.open("rb") as f:
        sample = f.read(65536).decode("utf-8", errors="ignore")
    inside = r'"[^"\n]*\d,\d[^"\n]*"' if delimiter == "," else r"\d,\d"
    if not re.search(inside, sample):
        return []
    with _csv_errors(path):
        head = pd.read_csv(path, sep=delimiter, encoding="utf-8", dtype=str, nrows=SNIFF_ROWS)
    texts = {str(c): head[c].dropna().str.strip() for c in head.columns}
    if not any(_decimal_comma(t) for t in texts.values()):
        return []
    return [
        c
        for c, t in texts.items()
        if len(t) and t.str.match(_GROUPED + r"|^[-+]?\d+$").all() and t.str.match(_GROUPED).any()
    ]


def _decimal_comma(text: Any) -> bool:
    """Whether a column's text holds numbers written with a decimal comma (most of it then numbers)."""
    import pandas as pd

    from nrad.preprocess import normalize_numbers, number_format_of

    if not len(text) or not text.str.contains(r"\d,\d", regex=True).any() or number_format_of(text) != ",":
        return False
    parsed = pd.to_numeric(normalize_numbers(text.astype("string"), ","), errors="coerce")
    return bool(parsed.notna().mean() >= 0.9)


def _ungroup(df: Any, grouped: list[str]) -> Any:
    """``df`` with the columns :func:`grouped_thousands` named read as numbers, their points out."""
    import pandas as pd

    for c in grouped:
        if c not in df.columns:
            continue
        values = pd.to_numeric(df[c].str.strip().str.replace(".", "", regex=False), errors="coerce")
        # A value the first rows did not foresee (a word) leaves the column as text, read later.
        if values.notna().sum() == df[c].notna().sum():
            df[c] = values
    return df


def count_rows(path: str | Path) -> int | None:
    """Rows in a Parquet file or directory from its metadata; None for CSV (unknown without reading)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nrad.errors import NradError

    path = _existing(path)
    if not _is_parquet(path):
        return None
    total = 0
    for part in parquet_files(path):
        try:
            total += pq.ParquetFile(part).metadata.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise NradError(f"cannot read Parquet {part}: {exc}") from exc
    return total


def parquet_files(path: Path) -> list[Path]:
    """The Parquet files of a file or dataset directory, in natural name order (part.2 < part.10)."""
    from nrad.errors import NradError

    if not path.is_dir():
        return [path]
    files = sorted(
        (p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".parquet", ".pq")),
        key=_natural_key,
    )
    if not files:
        raise NradError(f"directory {path} holds no .parquet files")
    return files


def _natural_key(path: Path) -> list[Any]:
    """Sort ``part.2`` before ``part.10`` (Dask and Spark number their files without padding)."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def _existing(path: str | Path) -> Path:
    from nrad.errors import NradError

    path = Path(path)
    if not path.exists():
        raise NradError(f"file {path} does not exist")
    return path


def _is_parquet(path: Path) -> bool:
    return path.is_dir() or path.suffix.lower() in (".parquet", ".pq")


def csv_delimiter(path: Path) -> str:
    """Check that ``path`` is a non-empty UTF-8 CSV with unique headers; return its delimiter."""
    import csv

    from nrad.errors import NradError

    try:
        with path.open("rb") as f:
            head = f.read(65536)
    except OSError as exc:
        raise NradError(f"cannot read {path}: {exc.strerror}") from exc
    if not head.strip():
        raise NradError(f"{path} is empty; give a CSV with a header row and at least one data row")
    try:
        sample = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a multi-byte character cut by the sample
            raise NradError(
                f"{path} is not UTF-8 (byte {exc.start} is 0x{head[exc.start]:02x}); re-save it as UTF-8"
            ) from exc
        sample = head[: exc.start].decode("utf-8")
    try:
        delimiter = csv.Sniffer().sniff(sample.split("\n", 20)[0] + "\n", delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    header = next(csv.reader([sample.split("\n", 1)[0]], delimiter=delimiter), [])
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise NradError(f"{path} has duplicate column names: {', '.join(dupes)}; rename them")
    return delimiter


@contextmanager
def _csv_errors(path: Path) -> Iterator[None]:
    """Turn pandas' CSV errors (raised at open or at any later chunk) into NradError."""
    import pandas as pd

    from nrad.errors import NradError

    try:
        yield
    except UnicodeDecodeError as exc:
        raise NradError(f"{path} is not UTF-8 (byte {exc.start}); re-save it as UTF-8") from exc
    except pd.errors.EmptyDataError as exc:
        raise NradError(f"{path} has no columns; give a CSV with a header row") from exc
    except pd.errors.ParserError as exc:
        raise NradError(
            f"{path} is not a well-formed CSV: {exc}. Check that every row has the header's columns"
        ) from exc


def _iter_parquet(path: Path, batch_rows: int) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nrad.errors import NradError

    try:
        # pre_buffer=False: with it, pyarrow keeps every row group it has read
        # buffered until the file is closed, which would make memory grow with
        # the file.
        pf = pq.ParquetFile(path, pre_buffer=False)
        _check_flat(pf.schema_arrow, path)
        for batch in pf.iter_batches(batch_size=batch_rows):
            batch.validate(full=True)
            yield _arrow_to_pandas(pa.Table.from_batches([batch]), path)
    except (pa.ArrowException, OSError) as exc:
        raise NradError(f"cannot read Parquet {path}: {exc}") from exc


def _check_flat(schema: Any, path: Path) -> None:
    import pyarrow as pa

    from nrad.errors import NradError

    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise NradError(
            f"{path} has nested columns ({', '.join(nested)}); flatten them or pass --ignore for each"
        )


def _arrow_to_pandas(table: Any, path: Path) -> Any:
    from nrad.errors import NradError

    try:
        return table.to_pandas()
    except Exception:  # noqa: BLE001 - damaged pandas metadata surfaces as many error types
        pass
    # The fuzzer found files whose pandas metadata (a JSON blob) is damaged
    # while the columns are fine: read the columns without it.
    try:
        return table.replace_schema_metadata(None).to_pandas()
    except Exception as exc:  # noqa: BLE001
        raise NradError(f"cannot convert Parquet {path} to a table: {type(exc).__name__}: {exc}") from exc


def _read_parquet(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nrad.errors import NradError

    try:
        table = pq.read_table(path)
        # Full validation checks, among others, that text is valid UTF-8
        # (the fuzzer found files that fail only later, deep in pandas).
        table.validate(full=True)
    except (pa.ArrowException, OSError) as exc:
        raise NradError(f"cannot read Parquet {path}: {exc}") from exc
    _check_flat(table.schema, path)
    return _arrow_to_pandas(table, path)


def write_table(df: Any, path: str | Path) -> Path:
    """Write a DataFrame as CSV or Parquet (by suffix), atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() in (".parquet", ".pq"):
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return path
