"""The ``nrad`` command line: parse, call one library function, render, exit code.

Heavy imports (torch, pyod, pandas) happen inside the commands so that
``nrad --help`` is instant.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="nrad: noise-robust anomaly detection for tables.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmark NRDE against baselines under the protocol of docs/benchmark.md.")
datasets_app = typer.Typer(help="List or download benchmark datasets.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
app.add_typer(datasets_app, name="datasets")

EXIT_BAD_INPUT = 2
_state = {"debug": False}


def _show_version(value: bool) -> None:
    if value:
        from nrad import __version__

        typer.echo(f"nrad {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option(help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show nrad's version and exit.", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    _state["debug"] = debug


def _split_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


@app.command()
def demo(
    out: Annotated[Path | None, typer.Option(help="Also write the top rows to this CSV.")] = None,
    seed: Annotated[int, typer.Option(help="random_state of the fit and of the split.")] = 0,
) -> None:
    """Fit NRDE on the bundled ADBench cardio sample and show its most anomalous rows."""
    from rich.console import Console
    from rich.table import Table

    from nrad.demo import run_demo

    console = Console()
    console.print("Fitting NRDE on the bundled [bold]cardio[/] sample (ADBench / UCI Cardiotocography) ...")
    result = run_demo(out, seed=seed)
    console.print(
        f"trained on {result.n_train} normal rows, scored {result.n_test} rows "
        f"({result.n_anomalies} labelled anomalies), fit {result.fit_seconds:.1f} s"
    )
    console.print(f"[bold]AUROC {result.auroc:.3f}[/]   AUPRC {result.auprc:.3f}")
    table = Table(title="Top 10 most anomalous scored rows")
    for col in result.top.columns:
        table.add_column(str(col))
    for row in result.top.itertuples(index=False):
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)
    if out is not None:
        console.print(f"written to {out}")


def _render(outcome: Any, top: int = 10) -> None:
    from rich.console import Console
    from rich.table import Table

    from nrad.results import with_row_numbers

    console = Console()
    scored = outcome.scored
    n_rows = len(scored) if outcome.n_rows is None else outcome.n_rows
    n_flagged = int(scored["flagged"].sum()) if outcome.n_flagged is None else outcome.n_flagged
    console.print(f"{n_rows} rows scored, [bold]{n_flagged} flagged[/] ({outcome.rule})")
    if outcome.auroc is not None:
        console.print(f"AUROC against the label column: {outcome.auroc:.3f}")
    # What the input held that the model reads specially (the report's data-quality section says how).
    seen = {k: v for k, v in outcome.counts.items() if v}
    if seen:
        console.print("in the input: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in seen.items()))
    from nrad.results import strongest_first

    shown = scored.iloc[strongest_first(scored)[:top]]
    if outcome.row_numbers:
        shown = with_row_numbers(shown)
    # The reason says in words what top_features says in numbers; show the words.
    shown = shown.drop(columns=[c for c in ("top_features",) if "reason" in shown.columns])
    title = f"The {top} most unusual rows (smallest p-value first; anomaly_score: {outcome.units}"
    title += (
        "; row: the line in the input, 1 = the first row after the header)" if outcome.row_numbers else ")"
    )
    table = Table(title=title)
    for col in shown.columns:
        table.add_column(str(col), overflow="fold")
    for row in shown.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    for note in outcome.notes:
        console.print(f"[yellow]note:[/] {note}")
    for path in outcome.written:
        console.print(f"wrote {path}")


def _cell(value: Any) -> str:
    if type(value).__name__ in ("bool", "bool_"):
        return "yes" if value else ""
    if isinstance(value, float):
        return f"{value:.2g}" if 0 < abs(value) < 1e-3 else f"{value:.4g}"
    return str(value)


FdrOpt = Annotated[
    float | None,
    typer.Option(help="Flag rows by Benjamini-Hochberg at this false discovery rate (default 0.05)."),
]
ContOpt = Annotated[
    float | None, typer.Option(help="Instead flag this share of rows with the highest scores.")
]
IdOpt = Annotated[
    str | None,
    typer.Option(help="Column that identifies rows; kept in the output, not a feature (default: a column "
                 "whose values are all distinct, if there is one)."),
]  # fmt: skip
IgnoreOpt = Annotated[list[str] | None, typer.Option(help="Column to leave out (repeat for several).")]
FeatureOpt = Annotated[
    list[str] | None,
    typer.Option(help="Column to keep as a feature although its values look like a key (all distinct "
                 "integers or text); repeat for several."),
]  # fmt: skip
ResultsOnlyOpt = Annotated[
    bool,
    typer.Option("--results-only", help="Write only the id and nrad's columns to --out (by default the "
                 "input's columns come first, then anomaly_score, p_value, flagged, top_features, reason)."),
]  # fmt: skip
SeedOpt = Annotated[int, typer.Option(help="random_state of the fit.")]
EpochsOpt = Annotated[int | None, typer.Option(help="Cap on training epochs (default: automatic).")]
ExplainOpt = Annotated[
    str,
    typer.Option(help="Explain 'flagged' rows and the top 10 (default), 'all' rows (slow: hundreds of "
                 "scores per row), or 'none'."),
]  # fmt: skip
SplitOpt = Annotated[
    bool,
    typer.Option("--source-split", help="Split the flows' sources into pure and noise and score the pure "
                 "data's density, as NRDE does (default: every source is kept; docs/method.md)."),
]  # fmt: skip
NoExplainOpt = Annotated[bool, typer.Option("--no-explain", help="Same as --explain none.")]
DetectorOpt = Annotated[
    str,
    typer.Option(help="'fused' (default): the table's density plus neighbour, isolation and "
                 "robust-distance scores (new rows, scored by 'nrad score': plus neighbour scores); "
                 "'nrde': the density alone (NRDE's flows with the category model)."),
]  # fmt: skip


def _progress() -> Any:
    """Progress lines on stderr (they never mix with a table or file on stdout)."""
    import time

    start = time.perf_counter()

    def say(message: str) -> None:
        typer.echo(f"[{time.perf_counter() - start:5.1f}s] {message}", err=True)

    return say


@app.command()
def detect(
    data: Annotated[Path, typer.Argument(help="CSV or Parquet table to score.")],
    train: Annotated[
        Path | None, typer.Option(help="Rows believed normal to fit on (default: DATA itself).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Scores file (.csv or .parquet): the input's rows in order, its columns and nrad's."
        ),
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Self-contained HTML report.")] = None,
    fdr: FdrOpt = None,
    contamination: ContOpt = None,
    save_model: Annotated[Path | None, typer.Option(help="Also save the fitted model (.nrad).")] = None,
    id_column: IdOpt = None,
    ignore: IgnoreOpt = None,
    label_column: Annotated[
        str | None, typer.Option(help="0/1 labels: left out of the fit, used for ROC/PR.")
    ] = None,
    seed: SeedOpt = 0,
    max_epochs: EpochsOpt = None,
    explain: ExplainOpt = "flagged",
    no_explain: NoExplainOpt = False,
    detector: DetectorOpt = "fused",
    feature: FeatureOpt = None,
    results_only: ResultsOnlyOpt = False,
    source_split: SplitOpt = False,
) -> None:
    """Fit and score DATA: anomaly_score, p_value, flagged, top_features and reason per row."""
    from nrad.workflow import detect as run

    outcome = run(data, train=train, out=out, report=report, fdr=fdr, contamination=contamination,
                  save_model_to=save_model, id_column=id_column, ignore=ignore or [],
                  label_column=label_column, random_state=seed, verbose=True, max_epochs=max_epochs,
                  explain="none" if no_explain else explain, progress=_progress(),
                  detector=detector, with_input=not results_only, keep=feature or [],
                  source_split=source_split)  # fmt: skip
    _render(outcome)


@app.command()
def fit(
    train: Annotated[Path, typer.Argument(help="CSV or Parquet rows believed normal.")],
    model: Annotated[Path, typer.Option(help="Model file to write (.nrad).")],
    id_column: IdOpt = None,
    ignore: IgnoreOpt = None,
    seed: SeedOpt = 0,
    max_epochs: EpochsOpt = None,
    sample_rows: Annotated[
        int,
        typer.Option(
            min=1,
            help="Fit on a uniform random sample of this many rows when TRAIN is larger "
            "(one streaming pass; the file never has to fit in memory).",
        ),
    ] = 200_000,
    detector: DetectorOpt = "fused",
    feature: FeatureOpt = None,
    source_split: SplitOpt = False,
) -> None:
    """Fit a model on TRAIN and save it."""
    from nrad.results import notes_for
    from nrad.workflow import fit_model

    fitted = fit_model(train, id_column, ignore or [], random_state=seed, verbose=True, max_epochs=max_epochs,
                       sample_rows=sample_rows, model_path=model, progress=_progress(),
                       detector=detector, keep=feature or [], source_split=source_split)  # fmt: skip
    sample = fitted.info["sample"]
    drawn = (
        f" (a uniform sample of {sample['rows_in_file']}, seed {sample['seed']})" if sample["sampled"] else ""
    )
    typer.echo(
        f"fitted on {sample['rows_sampled']} rows{drawn}: {len(fitted.schema.columns)} columns "
        f"({len(fitted.schema.numeric_names)} numeric, {len(fitted.schema.categorical_names)} categorical); "
        f"wrote {model}"
    )
    for note in notes_for(fitted):
        typer.echo(f"note: {note}")


@app.command()
def score(
    data: Annotated[Path, typer.Argument(help="CSV or Parquet table to score.")],
    model: Annotated[Path, typer.Option(help="Model file written by nrad fit or detect --save-model.")],
    out: Annotated[Path | None, typer.Option(help="Scores file (.csv or .parquet).")] = None,
    report: Annotated[Path | None, typer.Option(help="Self-contained HTML report.")] = None,
    fdr: FdrOpt = None,
    contamination: ContOpt = None,
    label_column: Annotated[str | None, typer.Option(help="0/1 labels for ROC/PR (not a feature).")] = None,
    explain: ExplainOpt = "flagged",
    no_explain: NoExplainOpt = False,
    engine: Annotated[
        str,
        typer.Option(
            help="'local' (this process; streamed when only --out is written) or 'dask' (a Dask cluster; "
            "OUT is a Parquet dataset)."
        ),
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="With --engine dask: address of a running scheduler (default: start a LocalCluster)."
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(min=1, help="With --engine dask and no --scheduler: local worker threads.")
    ] = 2,
    processes: Annotated[
        bool, typer.Option(help="With --engine dask and no --scheduler: worker processes, not threads.")
    ] = False,
    batch_rows: Annotated[int, typer.Option(min=1, help="Rows read and scored per batch.")] = 65_536,
    results_only: ResultsOnlyOpt = False,
) -> None:
    """Score DATA with a saved model.

    With --out (and no --report or --label-column) DATA is streamed in
    batches: a file of any size is scored in constant memory, and OUT appears
    only when complete.  A Parquet DATA may be a directory of files.  Columns
    the model was not trained on are left out (and named); --engine dask
    writes the id and nrad's columns only.
    """
    from nrad.workflow import score_model_file

    outcome = score_model_file(model, data, out=out, report=report, fdr=fdr, contamination=contamination,
                               label_column=label_column, explain="none" if no_explain else explain,
                               engine=engine, scheduler=scheduler, workers=workers, processes=processes,
                               batch_rows=batch_rows, progress=_progress(),
                               with_input=not results_only)  # fmt: skip
    _render(outcome)


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of .npz datasets (X, y).")] = None,
    settings: Annotated[str, typer.Option(help="Comma-separated settings.")] = "vanilla",
    methods: Annotated[
        str, typer.Option(help="Comma-separated registry names.")
    ] = "nrde,vanilla-flow,iforest,knn",
    seeds: Annotated[str, typer.Option(help="Seeds: 0,1,2 or a range 0-2.")] = "0",
    out: Annotated[Path, typer.Option(help="Runs CSV (appended; re-runs resume).")] = Path(
        "results/runs.csv"
    ),
    jobs: Annotated[int, typer.Option(help="Runs in parallel worker processes.")] = 1,
    time_limit: Annotated[float, typer.Option(help="Seconds before a run is killed.")] = 1800.0,
    datasets: Annotated[str, typer.Option(help="Only these datasets (comma-separated names).")] = "",
) -> None:
    """Run every missing (dataset, setting, seed, method) and append it to OUT."""
    if ctx.invoked_subcommand is not None:
        return
    if data_dir is None:
        raise typer.BadParameter("--data-dir is required", param_hint="--data-dir")
    from rich.console import Console

    from nrad.bench.runner import parse_seeds, run_grid

    console = Console(stderr=True)

    def show(row: dict[str, Any]) -> None:
        auroc = row.get("auroc")
        figure = f"AUROC {auroc:.3f}" if isinstance(auroc, float) else row.get("error", "")
        console.print(
            f"{row['dataset']:>14} {row['setting']:>22} seed {row['seed']} {row['method']:>12}: "
            f"{row['status']} {figure}"
        )

    n = run_grid(
        data_dir, _split_list(settings), _split_list(methods), parse_seeds(seeds), out,
        jobs=jobs, time_limit=time_limit, on_result=show, datasets=_split_list(datasets) or None,
    )  # fmt: skip
    console.print(f"{n} runs done; results in {out}")


@bench_app.command("report")
def bench_report(
    runs: Annotated[Path, typer.Argument(help="Runs CSV written by nrad bench.")],
    out: Annotated[Path, typer.Option(help="Markdown report to write.")] = Path("results/RESULTS.md"),
    seeds: Annotated[str, typer.Option(help="Only these seeds, comma-separated (default: all).")] = "",
) -> None:
    """Summarize a runs CSV: per setting mean AUROC/AUPRC, ranks, failures, figures."""
    from nrad.bench.runner import parse_seeds
    from nrad.bench.summary import write_report

    only = parse_seeds(seeds) or None
    for path in write_report(runs, out, seeds=only):
        typer.echo(f"wrote {path}")


@datasets_app.command("list")
def datasets_list(data_dir: Annotated[Path, typer.Argument(help="Folder of .npz datasets.")]) -> None:
    """Show name, rows, columns and anomaly rate of every dataset in DATA_DIR."""
    from rich.console import Console
    from rich.table import Table

    from nrad.bench.datasets import dataset_paths, load_dataset

    table = Table(title=str(data_dir))
    for col in ("name", "n", "d", "anomaly rate"):
        table.add_column(col)
    for name, path in dataset_paths(data_dir).items():
        ds = load_dataset(path)
        table.add_row(name, str(ds.X.shape[0]), str(ds.X.shape[1]), f"{ds.anomaly_rate:.3f}")
    Console().print(table)


@datasets_app.command("fetch")
def datasets_fetch(
    to: Annotated[Path, typer.Option(help="Folder to download into.")],
    base_url: Annotated[str | None, typer.Option(help="Where the .npz files are served.")] = None,
    names: Annotated[str, typer.Option(help="Only these file stems, e.g. 6_cardio.")] = "",
) -> None:
    """Download the 47 ADBench classical datasets (needs the internet)."""
    from nrad.bench.datasets import ADBENCH_URL, fetch_datasets

    written = fetch_datasets(to, base_url or ADBENCH_URL, _split_list(names) or None)
    typer.echo(f"downloaded {len(written)} files into {to}")


def main() -> None:
    """Entry point: run the app; usage mistakes and nrad's own errors become one line and exit code 2."""
    from nrad.errors import NradError

    try:
        app(standalone_mode=False)
    except NradError as exc:
        if _state["debug"]:
            raise
        typer.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        if _state["debug"] or not _is_click_error(exc):
            raise
        sys.exit(_report_usage_error(exc))


def _is_click_error(exc: BaseException) -> bool:
    """A usage mistake from the command-line parser (typer's bundled click, or click itself)."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__)


def _report_usage_error(exc: Any) -> int:
    """One line: what was wrong and where to read how to type it; the exit code."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "nrad"
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        typer.echo(ctx.get_help())
        return EXIT_BAD_INPUT
    message = " ".join(str(exc.format_message()).split())
    if type(exc).__name__ == "NoSuchOption" and ctx is not None:
        # click suggests options that look alike, not the ones the mistake begins: "--id" is
        # "--id-column" cut short, which its similarity cutoff does not offer.
        given = str(exc.option_name)
        options = {o for param in ctx.command.params for o in getattr(param, "opts", [])}
        longer = sorted(o for o in options if o.startswith(given))
        if longer:
            message = f"No such option: {given}. Did you mean {' or '.join(longer)}?"
    typer.echo(f"error: {message} (see '{command} --help')", err=True)
    code = getattr(exc, "exit_code", EXIT_BAD_INPUT)
    return EXIT_BAD_INPUT if code in (None, 1) else int(code)
