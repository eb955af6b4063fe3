"""slapo_tune: what a training script needs to be tuned by `slapo-tune` (pure Python, no dependencies).

Put this folder on PYTHONPATH (``PYTHONPATH=/path/to/slapo/python python3 train.py``) and:

    import slapo_tune
    cfg = slapo_tune.config(batch_size=8, checkpoint=False)   # the trial's knobs, typed
    for step in range(steps):
        ...
        slapo_tune.report(step=step, samples_per_s=rate)       # intermediate: may stop the trial
    slapo_tune.report(samples_per_s=rate, peak_bytes=peak)     # final metrics

Run by hand (no tuner), config() returns the defaults and report() prints its lines.
See docs/runners.md, "A Python training script".
"""

import json
import math
import os
import sys

__all__ = ["config", "get", "report", "rank", "tuned"]

_PREFIX = "SLAPO_"
_METRICS_FILE = "SLAPO_METRICS_FILE"
_LINE_PREFIX = "slapo-metrics: "
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def tuned():
    """Whether this process runs as a trial of slapo-tune."""
    return _METRICS_FILE in os.environ


def rank():
    """This process's rank in a job of several (RANK, as torchrun and slapo-tune set it), else 0."""
    return int(os.environ.get("RANK", "0"))


def _infer(text):
    """A knob's value from its SLAPO_ variable: int, float, bool, a list of ints ("4,8"), or str."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "," in text:
        try:
            return [int(part) for part in text.split(",")]
        except ValueError:
            pass
    return text


def _as_type_of(default, text, name):
    """`text` converted to the type of `default`; a clear error naming the knob otherwise."""
    if default is None:
        return _infer(text)
    if isinstance(default, bool):
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(f"{_PREFIX}{name.upper()}={text!r}: knob '{name}' is a boolean "
                         f"(expected one of {', '.join(_TRUE + _FALSE)})")
    if isinstance(default, list):
        return [int(part) for part in text.split(",") if part]
    try:
        return type(default)(text)
    except ValueError:
        raise ValueError(f"{_PREFIX}{name.upper()}={text!r}: knob '{name}' is "
                         f"{type(default).__name__}, like its default {default!r}") from None


def get(name, default=None):
    """One knob: the trial's value, typed like `default`; `default` when not tuned."""
    text = os.environ.get(_PREFIX + name.upper())
    return default if text is None else _as_type_of(default, text, name)


def config(**defaults):
    """The trial's knobs as a dict: every keyword's value (typed like its default), and every other
    SLAPO_ variable slapo-tune set (its type inferred)."""
    values = {name: get(name, default) for name, default in defaults.items()}
    reserved = {_METRICS_FILE}
    for key, text in os.environ.items():
        if key.startswith(_PREFIX) and key not in reserved:
            name = key[len(_PREFIX):].lower()
            if name not in values:
                values[name] = _infer(text)
    return values


def _finite_or_none(value):
    value = float(value)
    return value if math.isfinite(value) else None  # null: the tuner says which was not finite


def report(step=None, **metrics):
    """Reports metrics: final ones, or with step=k an intermediate value the tuner may use to stop
    a trial that is clearly worse than the finished ones (--early-stop). Later values override
    earlier ones. Written to the file slapo-tune names, else printed as a `slapo-metrics:` line."""
    record = {}
    if step is not None:
        record["step"] = int(step)
    for name, value in metrics.items():
        record[name] = _finite_or_none(value)
    line = json.dumps(record, allow_nan=False)
    path = os.environ.get(_METRICS_FILE)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    else:
        sys.stdout.write(_LINE_PREFIX + line + "\n")
        sys.stdout.flush()
