"""`workbench suite from-flashinfer DIR` and `workbench export --flashinfer` on files made to FlashInfer-Bench's
published schema (flashinfer-bench 0.1.2's data models and its docs: Definition, Workload, Trace): the shapes of
the operations a problem covers become a suite `check` runs, every other file or line is reported with why, bad
input is one line with exit 2 and creates nothing, and every exported line is a valid Trace."""
import json
from pathlib import Path

import pytest

from workbench.flashinfer import schema, tensors
from workbench.harness import problems
from workbench.harness.scenarios import load_suite


def definition(name, op_type, axes, inputs, outputs=None):
    return {"name": name, "op_type": op_type, "description": "made to the published schema", "tags": [],
            "axes": axes, "inputs": inputs, "outputs": outputs or {"out": {"shape": None, "dtype": "bfloat16"}},
            "reference": "def run(*args):\n    ..."}


def gemm_definition(n, k, dtype="bfloat16", op_type="gemm"):
    return definition(f"gemm_n{n}_k{k}", op_type, {"M": {"type": "var"}, "N": {"type": "const", "value": n},
                                                   "K": {"type": "const", "value": k}},
                      {"A": {"shape": ["M", "K"], "dtype": dtype}, "B": {"shape": ["N", "K"], "dtype": dtype}})


def attention_definition(hq, hkv, d):
    axes = {"total_q": {"type": "var"}, "total_kv": {"type": "var"}, "len_indptr": {"type": "var"},
            "num_qo_heads": {"type": "const", "value": hq}, "num_kv_heads": {"type": "const", "value": hkv},
            "head_dim": {"type": "const", "value": d}}
    inputs = {"q": {"shape": ["total_q", "num_qo_heads", "head_dim"], "dtype": "bfloat16"},
              "k": {"shape": ["total_kv", "num_kv_heads", "head_dim"], "dtype": "bfloat16"},
              "v": {"shape": ["total_kv", "num_kv_heads", "head_dim"], "dtype": "bfloat16"},
              "qo_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
              "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"}, "sm_scale": {"shape": None, "dtype": "float32"}}
    return definition(f"gqa_ragged_prefill_causal_h{hq}_kv{hkv}_d{d}", "gqa_ragged", axes, inputs)


def workload(definition_name, axes, inputs, n):
    return json.dumps({"definition": definition_name, "solution": None, "evaluation": None,
                       "workload": {"uuid": f"00000000-0000-4000-8000-{n:012d}", "axes": axes, "inputs": inputs}})


@pytest.fixture
def run_dir(tmp_path):
    """A serving run's files: GEMM (bf16, fp16), ragged attention prefill (indptr in safetensors and random),
    rmsnorm and paged decode (no problem here), a line that is not JSON, a workload without its definition."""
    root = tmp_path / "fi_run"
    defs, work = root / "definitions", root / "workloads"
    for d in (gemm_definition(64, 128), gemm_definition(48, 40, "float16"), attention_definition(4, 2, 64),
              definition("rmsnorm_h64", "rmsnorm",
                         {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 64}},
                         {"hidden_states": {"shape": ["batch_size", "hidden_size"], "dtype": "bfloat16"}}),
              definition("gqa_paged_decode_h4_kv2_d64_ps16", "gqa_paged", {"batch_size": {"type": "var"}},
                         {"q": {"shape": ["batch_size"], "dtype": "bfloat16"}})):
        (defs / d["op_type"]).mkdir(parents=True, exist_ok=True)
        (defs / d["op_type"] / f"{d['name']}.json").write_text(json.dumps(d, indent=1))
    (work / "gemm").mkdir(parents=True)
    rand = {"A": {"type": "random"}, "B": {"type": "random"}}
    (work / "gemm" / "gemm_n64_k128.jsonl").write_text("\n".join(
        [workload("gemm_n64_k128", {"M": m}, rand, i) for i, m in enumerate((1, 16, 16, 33))] + ["{not json"]) + "\n")
    (work / "gemm" / "gemm_n48_k40.jsonl").write_text(workload("gemm_n48_k40", {"M": 8}, rand, 9) + "\n")
    (work / "gemm" / "gemm_n1_k1.jsonl").write_text(workload("gemm_n1_k1", {"M": 8}, rand, 10) + "\n")
    (work / "gqa_ragged").mkdir()
    tensors.write_ints(work / "gqa_ragged" / "indptr.safetensors", {"qo": [0, 40, 80, 100], "kv": [0, 40, 80, 150]})
    ragged = {"q": {"type": "random"}, "k": {"type": "random"}, "v": {"type": "random"},
              "sm_scale": {"type": "scalar", "value": 0.125}}
    blob = "workloads/gqa_ragged/indptr.safetensors"
    files = {"qo_indptr": {"type": "safetensors", "path": blob, "tensor_key": "qo"},
             "kv_indptr": {"type": "safetensors", "path": blob, "tensor_key": "kv"}}
    name = "gqa_ragged_prefill_causal_h4_kv2_d64"
    (work / "gqa_ragged" / f"{name}.jsonl").write_text("\n".join([
        workload(name, {"total_q": 100, "total_kv": 150, "len_indptr": 4}, {**ragged, **files}, 20),
        workload(name, {"total_q": 96, "total_kv": 96, "len_indptr": 3}, {**ragged, "qo_indptr": {"type": "random"},
                 "kv_indptr": {"type": "random"}}, 21)]) + "\n")
    (work / "rmsnorm.jsonl").write_text(
        workload("rmsnorm_h64", {"batch_size": 4}, {"hidden_states": {"type": "random"}}, 30) + "\n")
    return root


@pytest.fixture
def cli(run_cli):
    return lambda *argv: run_cli([str(a) for a in argv])


def test_a_gemm_suite_from_a_serving_run_and_why_the_rest_was_skipped(cli, run_dir, tmp_path):
    out = tmp_path / "gemm.csv"
    code, stdout, err = cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", out)
    assert code == 0, err
    shapes = [(s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.category) for s in load_suite(str(out),
                                                                                  problem=problems.load("gemm_bf16"))]
    assert shapes == [(1, 64, 128, 128, 64, 64, "serving"), (16, 64, 128, 128, 64, 64, "serving"),
                      (33, 64, 128, 128, 64, 64, "serving")]          # M = 16 twice: one scenario
    assert "3 gemm_bf16 scenarios from 9 workloads of 5 definitions (1 shapes seen more than once)" in stdout
    for needle in ("not JSON", "float16 tensors and gemm_bf16 is bf16", "its definition 'gemm_n1_k1' is not in",
                   "op_type gqa_ragged: not one gemm_bf16 covers", "op_type rmsnorm"):
        assert needle in stdout, needle
    code, stdout, _ = cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", out, "--force",
                          "--any-dtype")
    assert code == 0 and len(load_suite(str(out), problem=problems.load("gemm_bf16"))) == 4


def test_an_attention_suite_groups_ragged_sequences_and_check_runs_it(cli, run_dir, tmp_path):
    out = tmp_path / "attn.csv"
    code, stdout, err = cli("suite", "from-flashinfer", run_dir, "-o", out)
    assert code == 0, err
    got = sorted((s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal)
                 for s in load_suite(str(out)))
    # indptr from safetensors: two sequences of 40/40 and one of 20/70; random indptr: two equal halves of 48
    assert got == [(1, 4, 2, 20, 70, 64, True), (2, 4, 2, 40, 40, 64, True), (2, 4, 2, 48, 48, 64, True)]
    code, stdout, _ = cli("check", "standin:correct", "--suite", out, "--traces", "", "--cache-dir", tmp_path / "c")
    assert code == 0 and "scenarios: 3 passed" in stdout


@pytest.mark.parametrize("argv,needle", [
    (["suite", "from-flashinfer", "{tmp}/nowhere"], "is not a folder"),
    (["suite", "from-flashinfer", "{tmp}/empty"], "no workload in"),
    (["suite", "from-flashinfer", "{run}", "--problem", "nope"], "--problem: problem 'nope'"),
    (["export", "--flashinfer", "{tmp}/empty", "-o", "{tmp}/x.jsonl"], "holds no evaluation rows"),
    (["export", "--flashinfer", "-o", "{tmp}/x.jsonl"], "pass a trace root or --result"),
])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(cli, run_dir, tmp_path, argv, needle):
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{run}", str(run_dir)) for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = cli(*argv, *(["-o", tmp_path / "s.csv"] if argv[0] == "suite" else []))
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_existing_suite_is_not_replaced_without_force(cli, run_dir, tmp_path):
    (tmp_path / "s.csv").write_text("keep me")
    code, _, err = cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", tmp_path / "s.csv")
    assert code == 2 and "exists; pass --force" in err and (tmp_path / "s.csv").read_text() == "keep me"


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_a_runs_evaluations_export_as_valid_flashinfer_traces(cli, run_dir, tmp_path):
    suite, traces = tmp_path / "gemm.csv", tmp_path / "traces"
    cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", suite)
    for name in ("correct", "missing_barrier"):
        cli("check", f"standin:{name}", "--problem", "gemm_bf16", "--suite", suite, "--traces", traces,
            "--cache-dir", tmp_path / "c")
    code, _, err = cli("export", "--flashinfer", traces, "-o", tmp_path / "x.jsonl")
    assert code == 2 and "CPU stand-in" in err and not (tmp_path / "x.jsonl").exists()
    code, stdout, err = cli("export", "--flashinfer", traces, "--include-standins", "-o", tmp_path / "x.jsonl")
    assert code == 0, err
    lines = _lines(tmp_path / "x.jsonl")
    assert len(lines) == 6 and all(schema.trace_problems(t) == [] for t in lines)
    statuses = sorted(t["evaluation"]["status"] for t in lines)
    assert statuses == ["INCORRECT_NUMERICAL"] * 3 + ["PASSED"] * 3
    passed = next(t for t in lines if t["evaluation"]["status"] == "PASSED")
    assert passed["definition"] == "gemm_n64_k128" and set(passed["workload"]["axes"]) == {"M"}
    assert passed["evaluation"]["performance"]["latency_ms"] > 0 and "mismatch" not in passed["evaluation"]["log"]
    assert len({t["workload"]["uuid"] for t in lines}) == 6


@pytest.mark.slow
def test_attention_exports_its_indptr_as_safetensors_beside_the_traces(cli, run_dir, tmp_path):
    suite = tmp_path / "attn.csv"
    cli("suite", "from-flashinfer", run_dir, "-o", suite)
    cli("check", "standin:correct", "--suite", suite, "--json", tmp_path / "run.json", "--traces", "",
        "--cache-dir", tmp_path / "c")
    (tmp_path / "out").mkdir()                  # an output's folder must exist (validate.output_file)
    code, _, err = cli("export", "--flashinfer", "--result", tmp_path / "run.json", "--include-standins", "-o",
                       tmp_path / "out" / "attn.jsonl")
    assert code == 0, err
    lines = _lines(tmp_path / "out" / "attn.jsonl")
    assert [t["definition"] for t in lines] == ["gqa_ragged_prefill_causal_h4_kv2_d64"] * 3
    spec = lines[0]["workload"]["inputs"]["qo_indptr"]
    indptr = tensors.read_ints(tmp_path / "out" / spec["path"], spec["tensor_key"])
    axes = lines[0]["workload"]["axes"]
    assert indptr[-1] == axes["total_q"] and len(indptr) == axes["len_indptr"]


def _published_trace_model():
    """flashinfer-bench's own Trace model where the package is installed (even with --no-deps: its data models need
    only pydantic; the package's __init__ imports torch and flashinfer, so the three files are loaded by path)."""
    import importlib.util
    import sys
    import types

    spec = importlib.util.find_spec("flashinfer_bench")
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    saved = {k: sys.modules.get(k) for k in ("fib_data",)}
    package = types.ModuleType("fib_data")
    package.__path__ = [str(data)]
    sys.modules["fib_data"] = package
    try:
        for name in ("utils", "workload", "trace"):
            loader = importlib.util.spec_from_file_location(f"fib_data.{name}", data / f"{name}.py")
            module = importlib.util.module_from_spec(loader)
            sys.modules[f"fib_data.{name}"] = module
            loader.loader.exec_module(module)
        return sys.modules["fib_data.trace"].Trace
    finally:
        for name in ("fib_data", "fib_data.utils", "fib_data.workload", "fib_data.trace"):
            sys.modules.pop(name, None)
        sys.modules.update({k: v for k, v in saved.items() if v is not None})


def _published_refuses(trace) -> bool:
    model = _published_trace_model()
    try:
        model.model_validate(trace)
    except ValueError:          # pydantic's ValidationError is a ValueError
        return True
    return False


def _schema_examples():
    """(trace, what schema.py must say, or None for a valid trace): the cases the published models decide."""
    good = json.loads(workload("gemm_n64_k128", {"M": 4}, {"A": {"type": "random"}}, 1))
    env = {"hardware": "NVIDIA_H200", "libs": {"torch": "2.13.0"}}
    passed = {**good, "solution": "s", "evaluation": {
        "status": "PASSED", "environment": env, "timestamp": "2026-12-01T00:00:00Z",
        "correctness": {"max_relative_error": "NaN", "max_absolute_error": "NaN", "extra": {"rel_l2_err": 0.01}},
        "performance": {"latency_ms": 0.5, "reference_latency_ms": 0.4, "speedup_factor": 0.8}}}
    no_performance = {**passed, "evaluation": {k: v for k, v in passed["evaluation"].items() if k != "performance"}}
    runtime_with_correctness = {**no_performance, "evaluation": {**no_performance["evaluation"],
                                                                 "status": "RUNTIME_ERROR"}}
    return [(good, None), (passed, None), (no_performance, "must include performance"),
            (runtime_with_correctness, "must not include correctness"),
            ({**good, "workload": {**good["workload"], "axes": {"M": -1}}}, "axes must map"),
            ({**good, "workload": {**good["workload"], "inputs": {"A": {"type": "file"}}}}, "type must be random"),
            ({**good, "workload": {**good["workload"], "uuid": ""}}, "uuid must be"),
            ({**passed, "evaluation": {**passed["evaluation"], "status": "OK"}}, "is not one of"),
            ({**passed, "evaluation": {**passed["evaluation"], "environment": {"hardware": ""}}}, "hardware")]


@pytest.mark.parametrize("index", range(len(_schema_examples())))
def test_the_schema_checks_refuse_what_the_published_models_refuse(index):
    trace, says = _schema_examples()[index]
    found = " ".join(schema.trace_problems(trace))
    assert (found == "") if says is None else (says in found), found
    if _published_trace_model() is not None:        # the package itself agrees, where it is installed
        assert _published_refuses(trace) == (says is not None)


def test_the_definition_checks():
    assert schema.definition_problems(gemm_definition(64, 128)) == []
    assert schema.definition_problems(attention_definition(4, 2, 64)) == []
    assert "const axis needs an integer" in " ".join(
        schema.definition_problems({**gemm_definition(64, 128), "axes": {"N": {"type": "const"}}}))
    assert "needs a dtype" in " ".join(
        schema.definition_problems({**gemm_definition(64, 128), "inputs": {"A": {"shape": ["M"]}}}))


@pytest.mark.slow
def test_exported_traces_validate_with_flashinfer_bench_itself_where_it_is_installed(cli, run_dir, tmp_path):
    """An exported file, line by line, through flashinfer-bench 0.1.2's own Trace model (`pip install --no-deps
    --target DIR flashinfer-bench==0.1.2` and DIR on PYTHONPATH is enough)."""
    model = _published_trace_model()
    if model is None:
        pytest.skip("flashinfer-bench (0.1.2) is not installed here")
    suite, traces = tmp_path / "gemm.csv", tmp_path / "traces"
    cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", suite)
    for name in ("correct", "missing_barrier", "refuses"):
        cli("check", f"standin:{name}", "--problem", "gemm_bf16", "--suite", suite, "--traces", traces,
            "--cache-dir", tmp_path / "c")
    code, _, err = cli("export", "--flashinfer", traces, "--include-standins", "-o", tmp_path / "x.jsonl")
    assert code == 0, err
    lines = _lines(tmp_path / "x.jsonl")
    statuses = {model.model_validate(t).evaluation.status.value for t in lines}
    assert statuses == {"PASSED", "INCORRECT_NUMERICAL", "RUNTIME_ERROR"}


@pytest.mark.slow
def test_check_builds_a_real_kernel_on_an_imported_suite_static_only_on_the_cpu(cli, run_dir, tmp_path):
    """CPU: the suite is read and the GEMM original built and checked against it (no GPU to time it: static_only,
    exit 2); on the H200 the same command times it (scripts/gemm_stage.py)."""
    from workbench.harness.result_line import parse_result_lines
    out = tmp_path / "gemm.csv"
    cli("suite", "from-flashinfer", run_dir, "--problem", "gemm_bf16", "-o", out)
    code, stdout, err = cli("check", problems.load("gemm_bf16").original, "--suite", out, "--traces", "",
                            "--cache-dir", tmp_path / "c")
    line = parse_result_lines(stdout)[-1]
    assert (code, line["problem"], line["status"], line["suite"]) == (2, "gemm_bf16", "static_only", str(out)), err


def test_the_shipped_sample_folder_gives_both_problems_a_suite(cli, tmp_path):
    """data/flashinfer_sample (the README's example): 28 GEMM shapes, 3 attention shapes, the other problem's
    workloads counted per file (one line each, not one per workload)."""
    sample = Path(__file__).resolve().parents[1] / "data" / "flashinfer_sample"
    code, stdout, err = cli("suite", "from-flashinfer", sample, "--problem", "gemm_bf16", "-o", tmp_path / "g.csv")
    assert code == 0 and "28 gemm_bf16 scenarios from 30 workloads of 5 definitions" in stdout, err
    assert "(2 lines): op_type gqa_ragged" in stdout and stdout.count("skipped ") == 1
    code, stdout, err = cli("suite", "from-flashinfer", sample, "-o", tmp_path / "a.csv")
    assert code == 0 and "3 attn_fwd scenarios" in stdout and stdout.count("(7 lines): op_type gemm") == 4, err
    big = max(load_suite(str(tmp_path / "g.csv"), problem=problems.load("gemm_bf16")), key=lambda s: s.m * s.n)
    assert (big.m, big.n, big.k, big.category) == (16384, 28672, 4096, "serving")
