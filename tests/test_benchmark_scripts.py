"""The benchmarks time what they say they time: patched copies patch what they say they patch, and the
end-to-end timing generates what it times."""
import ast
import importlib.util
import sys
from pathlib import Path

import pytest

import collective.protocols.kernel_support as kernel_support

ROOT = Path(__file__).resolve().parents[1]


def benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where its dataclasses look themselves up while it runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def function(text: str, name: str) -> ast.FunctionDef:
    return next(node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef) and node.name == name)


def test_the_copy_without_logging_returns_from_log_to_at_once():
    """Every rule logs through `log_to`; the copy's `log_to` must return its state before counting anything,
    and nothing else in the file may change (else logging_share.py times something other than logging)."""
    text = Path(kernel_support.__file__).read_text()
    patched = benchmark("logging_share").without_logging(text, Path("kernel_support.py"))
    body = function(patched, "log_to").body
    first = body[1] if isinstance(body[0].value, ast.Constant) else body[0]  # after the docstring
    assert ast.unparse(first) == "return state"
    assert ast.unparse(function(patched, "log_to").body[2:]) == ast.unparse(function(text, "log_to").body[1:])
    assert patched.replace("    return state\n", "", 1) == text


def test_the_copy_without_logging_refuses_a_log_to_it_does_not_know():
    text = Path(kernel_support.__file__).read_text().replace("def log_to(log, state,", "def log_to(log, status,")
    with pytest.raises(SystemExit, match="log_to"):
        benchmark("logging_share").without_logging(text, Path("kernel_support.py"))


def test_end_to_end_times_every_environment_block_it_generates(monkeypatch):
    """throughput.py's end-to-end line: the evaluation and the generation timed alone each draw the run's
    pooled blocks (`patterns.pooled_patterns` keeps recent ones: timing the batches the run just drew, or an
    earlier row drew, would time a lookup, ~5x cheaper than a draw), and the run draws them inside its timing
    (not while loading its code)."""
    import collective.environments.patterns as patterns
    import collective.evaluate as evaluate_module

    drawn, phase = [], ["run"]
    draw = patterns._pooled_block_patterns
    monkeypatch.setattr(patterns, "_pooled_block_patterns",
                        lambda *args: drawn.append((phase[0], len(args[1]))) or draw(*args))
    load = evaluate_module.load_compiled

    def loading(*args, **kwargs):
        phase[0] = "load"
        seconds = load(*args, **kwargs)
        phase[0] = "run"
        return seconds

    monkeypatch.setattr(evaluate_module, "load_compiled", loading)
    throughput = benchmark("throughput")
    evaluate, generate = throughput.evaluate, throughput.generate_environments
    monkeypatch.setattr(throughput, "evaluate", lambda config: phase.__setitem__(0, "run") or evaluate(config))
    monkeypatch.setattr(throughput, "generate_environments",
                        lambda *args: phase.__setitem__(0, "alone") or generate(*args))
    throughput.end_to_end("sound", "local_search", 2, 0)  # the fewest episodes (one pooled block); loads the code
    drawn.clear()
    throughput.end_to_end("sound", "local_search", 3, 0)  # the next row: another group, the same episodes
    # the run's first batches are prepared two at a time, so it may draw its block twice; the timing alone once
    assert ("run", 512) in drawn and drawn.count(("alone", 512)) == 1 and ("load", 512) not in drawn, drawn
