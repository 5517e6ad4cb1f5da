"""cairn from Python: read a phase's params, report spending, keep
checkpoints and memoise paid calls in cairn's cache.

A phase run by ``cairn run`` finds everything here in its environment
(``CAIRN_PHASE``, ``CAIRN_PARAMS``, ``CAIRN_REPORT``, ...). Outside a phase
every function still works, so a script also runs standalone:
:func:`params` is empty, :func:`report` records nothing and says so,
:func:`budget` says there is no phase, and memoised functions are called
through, unless ``CAIRN_CACHE_DIR`` names a cache, which they then use as
``cairn memo`` does.

Memoised calls are stored by the ``cairn`` binary (found as ``$CAIRN_BIN``,
else on ``PATH``, where ``cairn run`` puts itself for its phases): one
``cairn memo-serve`` helper per process answers over a pipe, so the cache,
its keys, verification and signatures are cairn's; this module never
writes the cache.

The module uses the standard library only and runs on Python 3.9 or newer.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import inspect
import json
import math
import os
import shutil
import subprocess
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, TypeVar, cast

__all__ = [
    "Budget",
    "CachedException",
    "CairnError",
    "budget",
    "canonical_json",
    "checkpoint_dir",
    "in_phase",
    "memo",
    "memo_call",
    "params",
    "phase",
    "report",
    "run_id",
    "workspace",
]

__version__ = "0.1.0"

# The line protocol of cairn memo-serve this module speaks.
_PROTOCOL = 1

# Costs are summed to nine decimals, as cairn sums them.
_COST_DECIMALS = 9

F = TypeVar("F", bound=Callable[..., Any])


class CairnError(Exception):
    """cairn could not do what was asked: the binary is missing, the
    cache refused a request, or a report value is not a valid amount."""


class CachedException(Exception):
    """Raised by a memoised function whose recorded call raised (only with
    ``cache_exceptions=True``). ``type_name`` is the qualified name of the
    exception first raised, ``message`` its ``str()``; the original
    exception object is not kept, so it is not rebuilt."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message} (recorded by cairn.memo)")
        self.type_name = type_name
        self.message = message


# ---------------------------------------------------------------------------
# The phase's environment


def in_phase() -> bool:
    """Whether this process runs inside a cairn phase."""
    return bool(os.environ.get("CAIRN_PHASE"))


def phase() -> Optional[str]:
    """The phase's address (``answer``, ``harden["small-1"]``), or None
    outside a phase."""
    return os.environ.get("CAIRN_PHASE") or None


def run_id() -> Optional[str]:
    """The id of the run this phase belongs to, or None outside a phase."""
    return os.environ.get("CAIRN_RUN_ID") or None


def workspace() -> Optional[Path]:
    """The workspace root (the directory of experiment.hcl), or None
    outside a phase."""
    w = os.environ.get("CAIRN_WORKSPACE")
    return Path(w) if w else None


def checkpoint_dir() -> Optional[Path]:
    """The phase's checkpoint directory: kept for the phase's key across
    failures and interruptions, removed once the phase succeeds. None
    outside a phase."""
    d = os.environ.get("CAIRN_CHECKPOINT_DIR")
    return Path(d) if d else None


def params() -> Dict[str, Any]:
    """The phase's params, as the JSON cairn wrote for them decodes (a
    fresh dict at each call); an empty dict outside a phase."""
    path = os.environ.get("CAIRN_PARAMS")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        value = json.load(f)
    if not isinstance(value, dict):
        raise CairnError(f"{path}: the params are not a JSON object")
    return value


# ---------------------------------------------------------------------------
# Spending


class _Frame:
    """The report lines written during one memoised call, kept with its
    result so that a later hit knows what the call cost."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: List[str] = []


# The memoised calls in progress in this context (thread or task),
# innermost last: a report counts for every enclosing call, as a nested
# cairn memo's report reaches the outer one's.
_frames: contextvars.ContextVar[Tuple[_Frame, ...]] = contextvars.ContextVar("cairn_memo_frames", default=())

_warned: Dict[str, bool] = {}
_warn_lock = threading.Lock()


def _warn_once(what: str, message: str) -> None:
    with _warn_lock:
        if _warned.get(what):
            return
        _warned[what] = True
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _check_amount(name: str, value: Any, integral: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CairnError(f"cairn.report: {name}={value!r} is not a number")
    if integral and not isinstance(value, int):
        raise CairnError(f"cairn.report: {name}={value!r} is not a whole number")
    if not math.isfinite(value) or value < 0:
        raise CairnError(f"cairn.report: {name}={value!r} must be zero or more")


def report(cost: Optional[float] = None, iterations: Optional[int] = None, **fields: Any) -> bool:
    """Report spending: append one JSON line such as
    ``{"cost": 0.02, "iterations": 1, "model": "large-1"}`` to the phase's
    ``$CAIRN_REPORT``, which cairn sums live against the phase's budget.

    The line is written with a single ``write`` to a file opened for
    appending, so lines from threads and subprocesses never interleave.
    ``cost`` must be a number, ``iterations`` a whole number, both zero or
    more; other fields must be JSON values and are kept in the report.
    Inside a memoised call the line is also kept with the call's result.

    Returns True when the line was written; outside a phase nothing is
    written, a warning says so once, and it returns False.
    """
    line: Dict[str, Any] = {}
    if cost is not None:
        _check_amount("cost", cost, integral=False)
        line["cost"] = cost
    if iterations is not None:
        _check_amount("iterations", iterations, integral=True)
        line["iterations"] = iterations
    line.update(fields)
    text = json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(", ", ": ")) + "\n"
    for frame in _frames.get():
        frame.lines.append(text)
    path = os.environ.get("CAIRN_REPORT")
    if not path:
        _warn_once("report", "cairn.report: not inside a cairn phase: nothing recorded")
        return False
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        n = os.write(fd, data)
        while n < len(data):  # only when the disk fills: finish the line
            n += os.write(fd, data[n:])
    finally:
        os.close(fd)
    return True


@dataclass(frozen=True)
class Budget:
    """What is left of the phase's budget. ``max_cost`` and
    ``max_iterations`` are the phase's limits (None: no limit, or no
    phase); ``spent_cost`` and ``spent_iterations`` what the phase has
    reported so far (subprocesses included)."""

    in_phase: bool
    max_cost: Optional[float]
    max_iterations: Optional[int]
    spent_cost: float
    spent_iterations: int

    @property
    def cost_left(self) -> Optional[float]:
        """max_cost minus the cost spent (never below 0), or None."""
        if self.max_cost is None:
            return None
        return max(0.0, round(self.max_cost - self.spent_cost, _COST_DECIMALS))

    @property
    def iterations_left(self) -> Optional[int]:
        """max_iterations minus the iterations spent (never below 0), or
        None."""
        if self.max_iterations is None:
            return None
        return max(0, self.max_iterations - self.spent_iterations)

    def __str__(self) -> str:
        if not self.in_phase:
            return "no cairn phase: no budget"
        parts = []
        if self.max_cost is not None:
            parts.append(f"cost {self.spent_cost:g} of {self.max_cost:g}")
        if self.max_iterations is not None:
            parts.append(f"iterations {self.spent_iterations} of {self.max_iterations}")
        return "spent " + ", ".join(parts) if parts else f"spent cost {self.spent_cost:g}, {self.spent_iterations} iterations; no limit"


def _sum_report(path: str) -> Tuple[float, int]:
    cost, its = 0.0, 0
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return cost, its
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # cairn warns about malformed lines; they count for nothing
        if not isinstance(line, dict):
            continue
        c, i = line.get("cost"), line.get("iterations")
        if isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c >= 0:
            cost = round(cost + c, _COST_DECIMALS)
        if isinstance(i, int) and not isinstance(i, bool) and i >= 0:
            its += i
    return cost, its


def budget() -> Budget:
    """What is left of the phase's ``max_cost`` and ``max_iterations``,
    from the limits cairn exported and the lines reported so far. Outside
    a phase: ``Budget(in_phase=False, ...)`` with no limits."""
    if not in_phase():
        return Budget(False, None, None, 0.0, 0)
    mc, mi = os.environ.get("CAIRN_MAX_COST"), os.environ.get("CAIRN_MAX_ITERATIONS")
    report_path = os.environ.get("CAIRN_REPORT")
    spent = _sum_report(report_path) if report_path else (0.0, 0)
    return Budget(True, float(mc) if mc else None, int(mi) if mi else None, spent[0], spent[1])


# ---------------------------------------------------------------------------
# Memoised calls


def canonical_json(value: Any) -> str:
    """The canonical JSON of a value, as memo keys and recorded results use
    it: what ``json.dumps`` writes with sorted keys, no spaces (``","`` and
    ``":"`` separators), non-ASCII characters as themselves (the key holds
    the UTF-8 bytes) and no NaN or infinity. Numbers are written as
    Python's json writes them: ``1`` and ``1.0`` differ, ``0.1`` is
    ``0.1``. Tuples are written as lists and dict keys as strings (so
    ``{1: x}`` and ``{"1": x}`` are one key). Raises TypeError for a value
    JSON cannot hold."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as e:
        raise TypeError(f"not representable as canonical JSON: {e}") from None
    return text


def _call_args(sig: Optional[inspect.Signature], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> str:
    """The canonical JSON of a call's arguments: bound to the function's
    signature with defaults applied, so f(1), f(x=1) and f() with x=1 by
    default are one call; a *args parameter is a list, **kwargs an object.
    A callable without a signature keys on {"args": [...], "kwargs": {...}}."""
    if sig is None:
        return canonical_json({"args": list(args), "kwargs": kwargs})
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return canonical_json(dict(bound.arguments))


class _Helper:
    """One cairn memo-serve process and the pipe to it."""

    def __init__(self, exe: str) -> None:
        self.pid = os.getpid()
        self.cache_dir = os.environ.get("CAIRN_CACHE_DIR")
        self.proc = subprocess.Popen(
            [exe, "memo-serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Its errors (a cache it cannot open) reach the phase's stderr.
            stderr=None,
        )
        self.lock = threading.Lock()

    def request(self, req: Dict[str, Any]) -> Dict[str, Any]:
        line = (json.dumps(req, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode(
            "utf-8"
        )
        stdin = cast(IO[bytes], self.proc.stdin)
        stdout = cast(IO[bytes], self.proc.stdout)
        stdin.write(line)
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            raise CairnError("cairn memo-serve ended without answering (its message, if any, is above on stderr)")
        resp = json.loads(answer)
        if not isinstance(resp, dict):
            raise CairnError(f"cairn memo-serve answered {answer!r}")
        return resp

    def close(self) -> None:
        """End the helper: at the end of its input it exits."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.discard()
        if self.proc.stdout:
            self.proc.stdout.close()

    def discard(self) -> None:
        """Kill the helper, whose pipe is in an unknown state."""
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass


_helper: Optional[_Helper] = None
# A forked child's copy of its parent's helper, kept so that it is never
# finalised here (which would write to or wait for the parent's process).
_inherited: List[_Helper] = []
_helper_lock = threading.Lock()


def _cairn_exe() -> str:
    exe = os.environ.get("CAIRN_BIN") or shutil.which("cairn")
    if not exe:
        raise CairnError(
            "cairn.memo: the cairn binary is not on PATH: put it there or set CAIRN_BIN to its path "
            "(unset CAIRN_CACHE_DIR to call memoised functions through outside a phase)"
        )
    return exe


def _request(req: Dict[str, Any]) -> Dict[str, Any]:
    """Send one request to this process's helper, starting it if needed:
    again after a fork (the child must not share its parent's pipe) and
    when $CAIRN_CACHE_DIR names another cache."""
    global _helper
    with _helper_lock:
        h = _helper
        if h is None or h.pid != os.getpid() or h.proc.poll() is not None or h.cache_dir != os.environ.get("CAIRN_CACHE_DIR"):
            if h is not None and h.pid == os.getpid():
                h.close()
            elif h is not None:
                _inherited.append(h)
                # Drop the fork's copies of the pipe (/dev/null takes their
                # place, so that their later finalisation closes nothing
                # else): the parent's helper then ends with the parent.
                null = os.open(os.devnull, os.O_RDWR)
                for f in (h.proc.stdin, h.proc.stdout):
                    if f:
                        os.dup2(null, f.fileno())
                os.close(null)
            h = _helper = _Helper(_cairn_exe())
    with h.lock:
        try:
            resp = h.request(req)
        except BaseException:
            # Interrupted or broken half way: the pipe may hold a stray
            # answer, so the next request starts a new helper.
            with _helper_lock:
                if _helper is h:
                    _helper = None
            h.discard()
            raise
    if resp.get("error"):
        raise CairnError(f"cairn memo-serve: {resp['error']}")
    return resp


def _shutdown() -> None:
    h = _helper
    if h is not None and h.pid == os.getpid():
        h.close()


atexit.register(_shutdown)


def _memo_enabled() -> bool:
    return in_phase() or bool(os.environ.get("CAIRN_CACHE_DIR"))


_hit_noted = threading.Event()


def _note_hit() -> None:
    """Report a cost of 0 at a process's first memo hit: a phase whose
    calls were all made before spends nothing, and says so (cairn warns
    about a phase with max_cost that reports no cost at all)."""
    if not _hit_noted.is_set() and os.environ.get("CAIRN_REPORT"):
        _hit_noted.set()
        report(cost=0)


def _qualname(fn: Callable[..., Any]) -> str:
    mod = getattr(fn, "__module__", None) or "?"
    return f"{mod}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _memoised(fn: Callable[..., Any], version: str, cache_exceptions: bool, name: Optional[str]) -> Callable[..., Any]:
    qualname = name or _qualname(fn)
    try:
        sig: Optional[inspect.Signature] = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _memo_enabled():
            return fn(*args, **kwargs)
        try:
            call_args = _call_args(sig, args, kwargs)
        except TypeError as e:
            raise TypeError(f"cairn.memo {qualname}: the arguments must be JSON values: {e}") from None
        base = {"protocol": _PROTOCOL, "function": qualname, "version": version, "args": call_args}
        resp = _request(dict(base, op="get"))
        if resp.get("hit"):
            _note_hit()
            if resp.get("raised"):
                r = resp.get("result") or {}
                raise CachedException(str(r.get("type", "?")), str(r.get("message", "")))
            return resp.get("result")
        frame = _Frame()
        token = _frames.set(_frames.get() + (frame,))
        raised: Optional[Exception] = None
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            if not cache_exceptions:
                raise
            raised = exc
            value = {"type": _qualname(type(exc)), "message": str(exc)}
        finally:
            _frames.reset(token)
        try:
            result_json = canonical_json(value)
        except TypeError as e:
            _warn_once("result:" + qualname, f"cairn.memo {qualname}: result not cached: {e}")
            return value
        put = dict(base, op="put", result=json.loads(result_json), raised=raised is not None, report="".join(frame.lines))
        try:
            resp = _request(put)
        except CairnError as e:
            # The call ran (and maybe paid): its result is returned all
            # the same, the failure to record it said.
            warnings.warn(f"cairn.memo {qualname}: result not cached: {e}", RuntimeWarning, stacklevel=2)
        else:
            if not resp.get("stored"):
                warnings.warn(f"cairn.memo {qualname}: {resp.get('reason', 'not cached')}", RuntimeWarning, stacklevel=2)
        if raised is not None:
            raise raised
        # A miss returns what a hit will: the result as JSON decodes it.
        return json.loads(result_json)

    wrapper.__cairn_memo__ = True  # type: ignore[attr-defined]
    return wrapper


def memo(version: str = "1", *, cache_exceptions: bool = False, name: Optional[str] = None) -> Callable[[F], F]:
    """Memoise a function in cairn's cache::

        @cairn.memo(version="2")
        def ask(model: str, question: str) -> dict:
            ...  # a paid call; cairn.report(cost=...) inside it

    A call's key is the function's qualified name (``module.qualname``,
    or ``name`` if given: a script run as ``__main__`` keys on
    ``__main__.ask``), ``version`` (change it when the function's meaning
    changes) and the canonical JSON of its arguments (:func:`canonical_json`,
    bound to the signature with defaults applied). A call seen before
    returns the recorded result without running, and what the call
    reported when it ran (:func:`report` inside it) is kept with it and
    not charged again, as for ``cairn memo``. Arguments and result must be
    JSON values; the result is returned as JSON decodes it, on a miss too
    (a tuple comes back a list). A result that is not a JSON value is
    returned but not recorded (a warning says so); nor is a result holding
    the value of a ``secret_env`` variable, and a secret's value in the
    arguments enters the key as its name.

    An exception is not recorded, so the call runs again next time, unless
    ``cache_exceptions=True``: then an ``Exception`` (never a
    KeyboardInterrupt) is recorded and later calls raise
    :class:`CachedException`. A call interrupted before it returns is not
    recorded: what it paid is charged, and it runs again.

    Two processes making the same call at the same moment both run it
    (there is no lock across processes); the first result recorded stays.
    Reports written by threads or subprocesses that the call starts are
    charged but not kept with its result.
    """

    def decorate(fn: F) -> F:
        return cast(F, _memoised(fn, version, cache_exceptions, name))

    return decorate


def memo_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Make one memoised call of ``fn``, as ``cairn.memo()(fn)(*args,
    **kwargs)`` does (version "1"); a function already decorated with
    :func:`memo` is simply called."""
    if getattr(fn, "__cairn_memo__", False):
        return fn(*args, **kwargs)
    return _memoised(fn, "1", False, None)(*args, **kwargs)
