"""Tests of the cairn module. The memo tests need the cairn binary: as
$CAIRN_BIN (make test-python sets it to the one it builds) or on PATH.

    CAIRN_BIN=$PWD/bin/cairn python3 -m unittest discover -s python/tests
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import warnings
from pathlib import Path
from typing import Any, Dict, List
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cairn  # noqa: E402

CAIRN = os.environ.get("CAIRN_BIN") or shutil.which("cairn")
needs_cairn = unittest.skipUnless(CAIRN, "the cairn binary is needed: set CAIRN_BIN or put cairn on PATH")

PHASE_VARS = [
    "CAIRN_PHASE",
    "CAIRN_RUN_ID",
    "CAIRN_WORKSPACE",
    "CAIRN_PARAMS",
    "CAIRN_REPORT",
    "CAIRN_CHECKPOINT_DIR",
    "CAIRN_CACHE_DIR",
    "CAIRN_MAX_COST",
    "CAIRN_MAX_ITERATIONS",
    "CAIRN_SECRET_NAMES",
]


def reset_helper() -> None:
    cairn._shutdown()
    cairn._helper = None


class Env(unittest.TestCase):
    """A test with a clean environment: no phase unless it makes one."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="cairn-py-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        patch = mock.patch.dict(os.environ)
        patch.start()
        self.addCleanup(patch.stop)
        for k in PHASE_VARS:
            os.environ.pop(k, None)
        if CAIRN:
            os.environ["CAIRN_BIN"] = CAIRN
        self.addCleanup(reset_helper)
        cairn._warned.clear()
        cairn._hit_noted.clear()

    def enter_phase(self, params: Dict[str, Any] | None = None, **extra: str) -> Path:
        """Make this process look like a phase of a run; returns its report
        path."""
        (self.tmp / "params.json").write_text(json.dumps(params or {}))
        (self.tmp / "ckpt").mkdir(exist_ok=True)
        rep = self.tmp / "report.jsonl"
        os.environ.update(
            CAIRN_PHASE="answer",
            CAIRN_RUN_ID="20240101-000000-abcd",
            CAIRN_WORKSPACE=str(self.tmp),
            CAIRN_PARAMS=str(self.tmp / "params.json"),
            CAIRN_REPORT=str(rep),
            CAIRN_CHECKPOINT_DIR=str(self.tmp / "ckpt"),
            CAIRN_CACHE_DIR=str(self.tmp / "cache"),
        )
        os.environ.update(extra)
        return rep

    def report_lines(self) -> List[Dict[str, Any]]:
        rep = self.tmp / "report.jsonl"
        if not rep.exists():
            return []
        return [json.loads(line) for line in rep.read_text().splitlines()]


class PhaseEnvironment(Env):
    def test_inside_a_phase(self) -> None:
        self.enter_phase({"model": "large-1", "n": 3})
        self.assertTrue(cairn.in_phase())
        self.assertEqual(cairn.phase(), "answer")
        self.assertEqual(cairn.run_id(), "20240101-000000-abcd")
        self.assertEqual(cairn.workspace(), self.tmp)
        self.assertEqual(cairn.checkpoint_dir(), self.tmp / "ckpt")
        self.assertEqual(cairn.params(), {"model": "large-1", "n": 3})

    def test_outside_a_phase(self) -> None:
        self.assertFalse(cairn.in_phase())
        for got in (cairn.phase(), cairn.run_id(), cairn.workspace(), cairn.checkpoint_dir()):
            self.assertIsNone(got)
        self.assertEqual(cairn.params(), {})
        b = cairn.budget()
        self.assertFalse(b.in_phase)
        self.assertIsNone(b.cost_left)
        self.assertEqual(str(b), "no cairn phase: no budget")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(cairn.report(cost=1))
        self.assertIn("not inside a cairn phase", str(w[0].message))


class Report(Env):
    def test_one_line_a_report(self) -> None:
        self.enter_phase()
        self.assertTrue(cairn.report(cost=0.02, iterations=1, model="large-1"))
        self.assertTrue(cairn.report(iterations=2))
        self.assertEqual(
            (self.tmp / "report.jsonl").read_text(),
            '{"cost": 0.02, "iterations": 1, "model": "large-1"}\n{"iterations": 2}\n',
        )

    def test_bad_amounts_are_refused(self) -> None:
        self.enter_phase()
        cases = [
            {"cost": -1},
            {"cost": float("nan")},
            {"cost": "lots"},
            {"cost": True},
            {"iterations": 1.5},
            {"iterations": -2},
        ]
        for kw in cases:
            with self.subTest(kw=kw), self.assertRaises(cairn.CairnError):
                cairn.report(**kw)
        self.assertEqual(self.report_lines(), [])

    def test_threads_and_subprocesses_never_interleave(self) -> None:
        self.enter_phase()
        pad = "x" * 5000  # lines longer than a pipe's atomic write

        def spend(who: str) -> None:
            for i in range(200):
                cairn.report(cost=0.001, iterations=1, who=who, i=i, pad=pad)

        threads = [threading.Thread(target=spend, args=(f"t{n}",)) for n in range(4)]
        child = (
            "import sys; sys.path.insert(0, sys.argv[1]); import cairn\n"
            "for i in range(200): cairn.report(cost=0.001, iterations=1, who=sys.argv[2], i=i, pad='x'*5000)\n"
        )
        pkg = str(Path(cairn.__file__).resolve().parent.parent)
        procs = [subprocess.Popen([sys.executable, "-c", child, pkg, f"p{n}"]) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for p in procs:
            self.assertEqual(p.wait(), 0)
        lines = self.report_lines()
        self.assertEqual(len(lines), 6 * 200)
        self.assertEqual(len({(ln["who"], ln["i"]) for ln in lines}), 6 * 200)
        self.assertEqual(cairn.budget().spent_iterations, 1200)
        self.assertEqual(cairn.budget().spent_cost, 1.2)

    def test_budget_left(self) -> None:
        self.enter_phase(CAIRN_MAX_COST="0.3", CAIRN_MAX_ITERATIONS="10")
        cairn.report(cost=0.1, iterations=1)
        cairn.report(cost=0.2, iterations=1)
        with open(self.tmp / "report.jsonl", "a") as f:
            f.write("not json\n")  # cairn warns about it; it counts for nothing
        b = cairn.budget()
        self.assertEqual((b.max_cost, b.max_iterations, b.spent_cost, b.spent_iterations), (0.3, 10, 0.3, 2))
        self.assertEqual((b.cost_left, b.iterations_left), (0.0, 8))
        self.assertEqual(str(b), "spent cost 0.3 of 0.3, iterations 2 of 10")


class Canonical(unittest.TestCase):
    def test_canonical_json(self) -> None:
        cases = [
            ({"b": 1, "a": [1.0, 0.1, 1e-05]}, '{"a":[1.0,0.1,1e-05],"b":1}'),
            ({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}'),
            (("t", None, True), '["t",null,true]'),
            ({"q": "été ✓"}, '{"q":"été ✓"}'),
            ({1: "a"}, '{"1":"a"}'),
        ]
        for value, want in cases:
            with self.subTest(value=value):
                self.assertEqual(cairn.canonical_json(value), want)

    def test_not_json(self) -> None:
        for value in (float("nan"), float("inf"), {"s": {1, 2}}, object(), "\ud800"):
            with self.subTest(value=value), self.assertRaises(TypeError):
                cairn.canonical_json(value)


@needs_cairn
class Memo(Env):
    def setUp(self) -> None:
        super().setUp()
        self.calls: List[Any] = []

    def model(self, version: str = "1", **kw: Any) -> Any:
        @cairn.memo(version=version, name="tests.model", **kw)
        def ask(question: str, temperature: float = 0.0) -> Dict[str, Any]:
            self.calls.append(question)
            cairn.report(cost=0.25, iterations=1)
            return {"answer": question.upper(), "pair": (1, 2)}

        return ask

    def test_a_repeated_call_is_not_paid_again(self) -> None:
        self.enter_phase()
        ask = self.model()
        first = ask("why")
        self.assertEqual(first, {"answer": "WHY", "pair": [1, 2]})
        self.assertEqual(ask("why"), first)
        self.assertEqual(ask(question="why", temperature=0.0), first)
        self.assertEqual(self.calls, ["why"])
        # The call is charged once; the first hit reports a cost of 0, so
        # that a phase whose calls all hit still reports its spending.
        self.assertEqual(self.report_lines(), [{"cost": 0.25, "iterations": 1}, {"cost": 0}])
        # The entry keeps what the call reported.
        resp = cairn._request(
            {"protocol": 1, "op": "get", "function": "tests.model", "version": "1", "args": cairn.canonical_json({"question": "why", "temperature": 0.0})}
        )
        self.assertEqual((resp["hit"], resp["cost"], resp["iterations"]), (True, 0.25, 1))
        # Another version, another argument: new calls.
        self.model(version="2")("why")
        ask("why", temperature=0.5)
        self.assertEqual(self.calls, ["why", "why", "why"])
        out = subprocess.run([CAIRN, "cache", "verify"], capture_output=True, text=True, check=False)  # type: ignore[list-item]
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("no problems", out.stdout)

    def test_the_key_is_cairns(self) -> None:
        # A new helper process (another phase) finds what this one recorded.
        self.enter_phase()
        self.model()("why")
        reset_helper()
        self.model()("why")
        self.assertEqual(self.calls, ["why"])

    def test_outside_a_phase_calls_go_through(self) -> None:
        ask = self.model()
        ask("why")
        ask("why")
        self.assertEqual(self.calls, ["why", "why"])
        self.assertIsNone(cairn._helper)

    def test_outside_a_phase_with_a_cache(self) -> None:
        os.environ["CAIRN_CACHE_DIR"] = str(self.tmp / "cache")
        ask = self.model()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ask("why")
            ask("why")
        self.assertEqual(self.calls, ["why"])

    def test_exceptions(self) -> None:
        self.enter_phase()
        n = {"runs": 0}

        def failing(x: int) -> int:
            n["runs"] += 1
            raise ValueError(f"bad {x}")

        plain = cairn.memo(name="tests.failing")(failing)
        for _ in range(2):
            with self.assertRaises(ValueError):
                plain(1)
        self.assertEqual(n["runs"], 2)
        kept = cairn.memo(name="tests.failing2", cache_exceptions=True)(failing)
        with self.assertRaises(ValueError):
            kept(1)
        with self.assertRaises(cairn.CachedException) as cm:
            kept(1)
        self.assertEqual(n["runs"], 3)
        self.assertEqual((cm.exception.type_name, cm.exception.message), ("builtins.ValueError", "bad 1"))

        def interrupted(x: int) -> int:
            n["runs"] += 1
            raise KeyboardInterrupt

        ki = cairn.memo(name="tests.ki", cache_exceptions=True)(interrupted)
        for _ in range(2):
            with self.assertRaises(KeyboardInterrupt):
                ki(1)
        self.assertEqual(n["runs"], 5)
        # The helper survived the interruption: calls still hit.
        with self.assertRaises(cairn.CachedException):
            kept(1)

    def test_arguments_and_results_must_be_json(self) -> None:
        self.enter_phase()
        ask = self.model()
        with self.assertRaises(TypeError):
            ask({1, 2})  # type: ignore[arg-type]
        self.assertEqual(self.calls, [])

        runs = []

        @cairn.memo(name="tests.setresult")
        def setresult() -> Any:
            runs.append(1)
            return {1, 2}

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(setresult(), {1, 2})
            setresult()
        self.assertEqual(len(runs), 2)
        self.assertIn("result not cached", str(w[0].message))

    def test_secrets_never_reach_the_cache(self) -> None:
        self.enter_phase(CAIRN_SECRET_NAMES="API_KEY", API_KEY="sk-very-secret")

        @cairn.memo(name="tests.leaky")
        def leaky(key: str) -> str:
            return "echo " + key

        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(leaky("sk-very-secret"), "echo sk-very-secret")
        self.assertIn("holds the value of secret API_KEY", str(w[0].message))
        self.model()("sk-very-secret")  # in the arguments: keyed by its name
        self.assertEqual(self.model()("sk-very-secret")["answer"], "SK-VERY-SECRET")
        for p in (self.tmp / "cache").rglob("*"):
            if p.is_file():
                self.assertNotIn(b"sk-very-secret", p.read_bytes(), p)

    def test_nested_calls_and_threads(self) -> None:
        self.enter_phase()
        ask = self.model()

        @cairn.memo(name="tests.outer")
        def outer(qs: List[str]) -> List[Any]:
            cairn.report(cost=0.5)
            return [ask(q) for q in qs]

        outer(["a", "b"])
        resp = cairn._request({"protocol": 1, "op": "get", "function": "tests.outer", "version": "1", "args": '{"qs":["a","b"]}'})
        self.assertEqual((resp["cost"], resp["iterations"]), (1.0, 2))

        errors: List[BaseException] = []

        def worker(k: int) -> None:
            try:
                for i in range(20):
                    self.assertEqual(ask(f"q{i % 10}")["answer"], f"Q{i % 10}")
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sorted(set(self.calls)), sorted({"a", "b"} | {f"q{i}" for i in range(10)}))

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork")
    def test_a_forked_child_has_its_own_helper(self) -> None:
        self.enter_phase()
        ask = self.model()
        ask("parent")
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                ask("parent")
                ask("child")
                if self.calls != ["parent", "child"]:
                    code = 2
            except BaseException:
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8, 0)
        ask("child")
        self.assertEqual(self.calls, ["parent"])

    def test_memo_call(self) -> None:
        self.enter_phase()
        runs = []

        def add(a: int, b: int = 1) -> int:
            runs.append((a, b))
            return a + b

        self.assertEqual(cairn.memo_call(add, 1), 2)
        self.assertEqual(cairn.memo_call(add, 1, b=1), 2)
        self.assertEqual(runs, [(1, 1)])


if __name__ == "__main__":
    unittest.main()
