"""Collector ``command``: every planned run executes the researcher's own program.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collect.collectors.base import Collector, ParamError, RunContext, RunResult, SharedInputs, check_params
from collect.collectors.command.attempts import (
    FAULT_METRICS,
    Attempt,
    combined,
    event_rows,
    fault_record,
    progress_rows,
    run_attempts,
    work_metrics,
)
from collect.collectors.command.identity import code_identity, git_identity, program_identity
from collect.collectors.command.injector import FaultInjector
from collect.collectors.command.outputs import (
    MAX_METRICS_BYTES,
    RunFailure,
    parse_metrics,
    phases_of,
    undeclared_info,
    written_names,
)
from collect.collectors.command.params import (
    PARAMS,
    RUN_FIELDS,
    check_argv,
    check_metrics,
    check_program_params,
    code_files,
    energy_metrics,
    format_argv,
    resolve_workdir,
    split_params,
)
from collect.collectors.command.process import EXIT_NOT_STARTED, Finished
from collect.collectors.command.runfolder import (
    MARKS_FILE,
    METRICS_FILE,
    RUN_FILE,
    STDERR_FILE,
    STDOUT_FILE,
    RunFolder,
    read_marks_in,
)
from collect.collectors.command.telemetry import record_program, sensor_for_env
from collect.collectors.command.threads import inherited_threads, run_threads, thread_env
from collect.collectors.failures import PARAM as FAILURES
from collect.collectors.failures import planned_faults
from collect.plugins import SENSORS, PluginError
from collect.telemetry.analysis.energy import ENERGY_METRICS, run_energy
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor, split_spec
from collect.traces.events import SUFFIX as EVENTS_SUFFIX
from collect.traces.events import write_events
from collect.traces.progress import SUFFIX as PROGRESS_SUFFIX
from collect.traces.progress import write_progress
from prereg.jsoncodec import readable_bytes

RUN_SUFFIX = "run"  # the run's folder: <run_id>.run
ERROR_TAIL = 400  # characters of stderr quoted in a failed run's error


def check_sensor_spec(spec: str, energy_signal: str) -> None:
    """A sensor spec that can be opened here (its kind registered or importable; a ``sim`` spec's
    options and signals checked without opening it); ``ParamError`` otherwise."""
    if spec == "none":
        return
    kind, rest = split_spec(spec)
    try:
        SENSORS.check_findable(kind)
    except PluginError as err:
        raise ParamError(f"sensor {spec!r}: {err}; use none, sim:..., nvml[:index=N] or replay:PATH") from None
    if kind == "sim":
        from collect.telemetry.sensors.sim import spec_signals  # lazy: numpy

        try:
            offered = spec_signals(rest)
        except SensorError as err:
            raise ParamError(f"sensor {spec!r}: {err}") from None
        if energy_signal not in offered:
            raise ParamError(
                f"energy_signal = {energy_signal} is not offered by sensor {spec!r} "
                f"(it offers {', '.join(sorted(offered))})"
            )


def validate(params: Mapping[str, Any], stratum: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The run's parameters checked: the collector's own (``check_params``), the program's, the argv
    placeholders (against ``stratum``'s factors too), the code globs and the sensor; ``ParamError``.
    The plan's ``failures`` (set by the engine, :mod:`collect.collectors.failures`) is kept as it is."""
    failures = params.get(FAILURES, ...)
    params = {k: v for k, v in params.items() if k != FAILURES}
    own, program = split_params(params)
    checked = check_params(CommandCollector, own)
    check_program_params(program)
    checked["workdir"] = resolve_workdir(checked["workdir"])
    known = set(params) | set(RUN_FIELDS) | set(stratum or {})
    check_argv(checked["argv"], known)
    code_files(checked["code"], Path(checked["workdir"]))
    check_sensor_spec(checked["sensor"], checked["energy_signal"])
    check_metrics(checked)
    return {**checked, **program, **({} if failures is ... else {FAILURES: failures})}


def _error_with_stderr(reason: str, finished: Finished) -> RunFailure:
    tail = finished.stderr.decode("utf-8", "replace").strip()[-ERROR_TAIL:]
    return RunFailure(f"{reason}; stderr ends: {tail!r}" if tail else f"{reason} (nothing on stderr)")


def _check_finished(finished: Finished, timeout_s: float) -> None:
    if finished.timed_out:
        raise _error_with_stderr(f"timed out after {timeout_s:g} s (timeout_s); its process group was killed", finished)
    code = finished.returncode
    if code == EXIT_NOT_STARTED:
        raise _error_with_stderr("the program could not be started (exit status 127)", finished)
    if code < 0:
        raise _error_with_stderr(f"the program was ended by signal {-code}", finished)
    if code != 0:
        raise _error_with_stderr(f"the program exited with status {code}", finished)


def _copy_key(workdir: str) -> str:
    """The folder name of ``workdir``'s private copy on a worker: a hash of the driver's path."""
    return hashlib.sha256(workdir.encode()).hexdigest()[:16]


class CommandCollector(Collector):
    """The researcher's program, once per planned run; see the module doc."""

    name = "command"
    PARAMS = PARAMS
    METRICS = {}  # the plan's own (PLAN_METRICS)
    EVIDENCE = "measured"
    PLAN_METRICS = True
    FAILURES = True  # takes the plan's experiment.failures (collect.collectors.failures) as its ``failures`` parameter

    @classmethod
    def check_run(cls, params: Mapping[str, Any], stratum: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`validate`, with the stratum's factors as placeholders."""
        return validate(params, stratum)

    @classmethod
    def metric_evidence(cls, params: Mapping[str, Any]) -> dict[str, str]:
        """Program metrics measured at best; energy metrics as the sensor gives them (sim: modeled)."""
        own, _ = split_params(params)
        sensor = str(own.get("sensor") or "none")
        energy = "modeled" if sensor.startswith("sim") else "measured"
        computed = set(energy_metrics({**own, "sensor": sensor, "metrics": own.get("metrics") or []}))
        return {m: energy if m in computed else cls.EVIDENCE for m in own.get("metrics") or []}

    @classmethod
    def signals(cls, params: Mapping[str, Any]) -> set[str]:
        """The energy signal, when a sensor is configured (an nvml or replay sensor is opened once to check)."""
        own, _ = split_params(params)
        sensor = str(own.get("sensor") or "none")
        if sensor == "none":
            return set()
        signal = str(own.get("energy_signal") or PARAMS["energy_signal"].default)
        if not sensor.startswith("sim"):
            try:
                spec, _ = sensor_for_env(sensor, os.environ)
                with open_sensor(spec) as opened:
                    if signal not in opened.signals() or signal in opened.unavailable:
                        raise ParamError(f"sensor {spec!r} cannot read {signal}")
            except (SensorError, RunFailure) as err:
                raise ParamError(f"sensor {sensor!r}: {err}") from None
        return {signal}

    @classmethod
    def shared_inputs(cls, params: list[Mapping[str, Any]], runs_dir: Path) -> SharedInputs:
        """Every ``code`` file of each distinct ``workdir``, as ``code/<key>/<path>``, and its git identity."""
        files: dict[str, Path] = {}
        facts: dict[str, Any] = {}
        for p in params:
            key = _copy_key(str(p["workdir"]))
            if f"git/{key}" in facts:
                continue
            root = Path(p["workdir"]).resolve()
            for path in code_files(p["code"], root):
                files[f"code/{key}/{path.resolve().relative_to(root).as_posix()}"] = path
            facts[f"git/{key}"] = git_identity(root)
        return SharedInputs(files, facts)

    def run(self, ctx: RunContext) -> RunResult:
        params = dict(ctx.params)
        git: Any = ...  # ...: code_identity reads the repository itself; on Ray, what the driver read
        if ctx.shipped is not None:  # a private copy of the code files, checked by the executor
            key = _copy_key(str(params["workdir"]))
            copy = ctx.shipped.root / "code" / key
            copy.mkdir(parents=True, exist_ok=True)
            params["workdir"], git = str(copy), ctx.shipped.facts.get(f"git/{key}")
        p = validate(params, ctx.stratum)
        own, _ = split_params(p)
        workdir = Path(own["workdir"])
        identity = code_identity(code_files(own["code"], workdir), workdir, git)
        folder = ctx.trace_path(RUN_SUFFIX)
        with RunFolder(ctx.trace_dir, folder.name) as run_folder:
            return self._run_in(ctx, p, identity, folder, run_folder)

    def _run_in(
        self, ctx: RunContext, p: dict[str, Any], identity: dict[str, Any], folder: Path, run_folder: RunFolder
    ) -> RunResult:
        """The run in its fresh folder (:class:`RunFolder`: created, and read back, through its descriptor)."""
        has_failures = FAILURES in p  # the plan injects failures (None: this stratum is a control)
        spec = p.pop(FAILURES, None)
        own, program = split_params(p)
        workdir = Path(own["workdir"])
        run_folder.write_new(
            RUN_FILE,
            readable_bytes(
                {
                    "run_id": ctx.run_id,
                    "prereg_sha256": ctx.plan_sha256 or None,
                    "stratum": dict(ctx.stratum),
                    "arm": ctx.arm,
                    "replicate": ctx.replicate,
                    "seed": ctx.seed,
                    "params": program,
                }
            ),
        )
        where = folder.absolute()
        values = {
            **p,
            **ctx.stratum,
            "seed": ctx.seed,
            "run_id": ctx.run_id,
            "arm": ctx.arm,
            "replicate": ctx.replicate,
            "run_dir": str(where),
        }
        argv = format_argv(own["argv"], values)
        env = {
            **os.environ,
            "PREREG_RUN": str(where / RUN_FILE),
            "PREREG_METRICS": str(where / METRICS_FILE),
            "PREREG_MARKS": str(where / MARKS_FILE),
            "PREREG_RUN_DIR": str(where),
        }
        num_cpus = float(ctx.resources.get("num_cpus", 1.0))
        threads, kept_threads = thread_env(num_cpus, env), inherited_threads(env)
        env.update(threads)  # OMP_NUM_THREADS and friends: the run's CPUs, unless collect run's environment sets them
        identity = {**identity, **program_identity(argv, workdir, env, own["packages"])}  # the program's Python
        planned = planned_faults(spec, ctx.seed)
        injector = None
        if has_failures:
            shape = spec or {}
            injector = FaultInjector(
                planned, shape.get("unit", "step"), shape.get("action", "kill_tree"), int(shape.get("rank", 0))
            )
        attempts: list[Attempt] = []
        # created before the program starts: whatever it does to these names, the output goes here
        stdout_fd, stderr_fd = run_folder.create(STDOUT_FILE), run_folder.create(STDERR_FILE)
        try:

            def launch(on_tick: Any) -> Finished:
                attempts[:] = run_attempts(argv, str(workdir), env, own["timeout_s"], injector, run_folder, on_tick)
                return combined(attempts)

            energy_names = energy_metrics(own)
            telemetry: dict[str, Any] = {}
            info: dict[str, Any] = {
                "command": identity,
                "argv": own["argv"],
                "sensor": own["sensor"],
                "threads": {"num_cpus": run_threads(num_cpus), "set": threads, "kept": kept_threads},
            }
            kept: list[str] = []
            if own["sensor"] == "none":
                finished = launch(None)
            else:
                spec_s, device = sensor_for_env(own["sensor"], env)
                recorded = record_program(
                    spec_s, own["energy_signal"], own["poll_ms"], own["idle_baseline_ms"], run_folder, launch
                )
                finished = recorded.finished
                info.update(
                    sensor=spec_s,
                    energy_signal=own["energy_signal"],
                    energy_evidence=recorded.evidence,
                    **({"sensor_device": device} if device else {}),
                )
            RunFolder.rewrite(stdout_fd, finished.stdout)
            RunFolder.rewrite(stderr_fd, finished.stderr)
        finally:
            os.close(stdout_fd)
            os.close(stderr_fd)
            if injector is not None:
                injector.close()
        info["output_bytes"] = {"stdout": finished.stdout_bytes, "stderr": finished.stderr_bytes}
        info["timing_s"] = {"program": round(finished.seconds, 4)}
        faults = injector.faults if injector is not None else []
        record = fault_record(faults, attempts)
        if injector is not None:
            info["faults"] = {
                **{k: v for k, v in (spec or {}).items() if k in ("unit", "action", "rank")},
                "planned": planned,
                "starts": len(attempts),
                "record": record,
            }
        run_folder.check_intact()
        _check_finished(finished, own["timeout_s"])
        phases = phases_of(read_marks_in(run_folder))
        reports = injector.reports if injector is not None else []
        counted = [m for m in own["metrics"] if m in FAULT_METRICS] if has_failures else []
        expected = [m for m in own["metrics"] if m not in energy_names and m not in counted]
        data = run_folder.read(METRICS_FILE, MAX_METRICS_BYTES, "metrics file")
        metrics = parse_metrics(data, expected)
        info.update(undeclared_info(data, [*expected, *counted], energy_names))  # kept as descriptive, never gated
        written = sorted(set(counted) & written_names(data))
        if written:
            raise RunFailure(
                f"metrics file: metric(s) {', '.join(written)} are counted by the collector from the "
                "progress reports (experiment.failures); the program must not write them"
            )
        if counted:
            work = work_metrics(reports, attempts, record)
            metrics.update({m: work[m] for m in counted})
        if own["sensor"] != "none":
            from collect.traces.telemetry import write_trace  # lazy: numpy

            energy = run_energy(recorded.trace, own["energy_signal"], *recorded.power_range_w)
            missing = [m for m in energy_names if m not in energy.metrics]
            if missing:
                raise RunFailure(f"energy metric(s) {', '.join(missing)} could not be computed from the telemetry")
            metrics.update({m: energy.metrics[m] for m in energy_names})
            telemetry[own["energy_signal"]] = energy.summary
            info["metric_evidence"] = {m: recorded.evidence for m in energy_names}
            kept = [path.name for path in write_trace(recorded.trace, ctx.trace_path("telemetry"))]
        write_events(ctx.trace_path(EVENTS_SUFFIX), event_rows(attempts, faults, reports, phases))
        kept.append(ctx.trace_path(EVENTS_SUFFIX).name)
        origin = attempts[0].finished.start_ns
        rows = progress_rows(reports, origin)
        if rows:
            write_progress(ctx.trace_path(PROGRESS_SUFFIX), rows)
            kept.append(ctx.trace_path(PROGRESS_SUFFIX).name)
        files = [f"{folder.name}/{name}" for name in run_folder.files()]
        run_folder.check_intact()
        return RunResult(metrics=metrics, telemetry=telemetry, traces=[*files, *kept], info=info)


__all__ = ["ENERGY_METRICS", "PARAMS", "CommandCollector", "validate"]
