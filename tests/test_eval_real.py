"""benchmarks/eval_real.py end to end on a small real repository: clone of a bare mirror at a pin, real
init + sync, every mode graded; a bad target stops the run with the question's id; --check shows leaks."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "eval_real.py"


def load_script(path: Path = SCRIPT) -> ModuleType:
    """The benchmark script at PATH (eval_real.py unless told), loaded as a module named by its file."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


TRANSLATED_DOCS = {
    "docs/en/proxy.md": "# Proxy\n\n## Proxy settings\n\nSet HTTPS_PROXY to route the requests through it.\n",
    "docs/ja/proxy.md": "# プロキシ\n\n## Proxy settings\n\nHTTPS_PROXY を設定: route requests through a proxy。\n",
}


def small_history(
    tmp_path: Path, *, template: bool = False, translated: bool = False
) -> tuple[Path, dict[str, str]]:
    """A bare mirror of a small history, the pin one commit before its tip (the tip must not leak in).
    TEMPLATE: the README is also kept, word for word, as a template in a hidden folder. TRANSLATED: a docs
    page is kept in English (docs/en) and in Japanese (docs/ja)."""
    work = tmp_path / "src"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    readme = "# Demo\n\nA demo tool.\n\n## Proxy settings\n\nSet HTTPS_PROXY to route requests.\n"
    shas = {
        "readme": commit(
            work,
            "Add a README",
            {
                "README.md": readme,
                **({".meta/README.md": readme} if template else {}),
                **(TRANSLATED_DOCS if translated else {}),
            },
        ),
        "empty": commit(
            work,
            "Fix crash when the config file is empty",
            {"src/config.py": "def load(text):\n    return parse(text) if text.strip() else {}\n"},
        ),
        "code": commit(
            work,
            "Tidy the loader",
            {"src/loader.py": "def frobnicate_widgets(items):\n    return sorted(items)\n"},
        ),
        "retry1": commit(work, "Add exponential backoff to retries", {"src/net.py": "DELAY = 2\n"}),
        "retry2": commit(
            work, "Cap the retry backoff at thirty seconds", {"src/net.py": "DELAY = 2\nCAP = 30\n"}
        ),
        "colour": commit(work, "Print warnings in yellow", {"src/ui.py": "YELLOW = 33\n"}),
    }
    shas["pin"] = shas["colour"]
    shas["after"] = commit(work, "Teleport the database to the moon", {"src/moon.py": "x = 1\n"})
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror)], check=True)
    return mirror, shas


def question_file(root: Path, shas: dict[str, str], *, extra: list[dict[str, Any]] | None = None) -> Path:
    questions = [
        {
            "id": "t-obvious",
            "kind": "symptom",
            "q": "crash when the config file is empty",
            "targets": [shas["empty"]],
        },
        {
            "id": "t-code",
            "kind": "code",
            "q": "where is frobnicate_widgets defined",
            "targets": [shas["code"]],
        },
        {
            "id": "t-doc",
            "kind": "doc",
            "q": "route requests through a proxy",
            "targets": ["README.md#Proxy settings"],
        },
        {
            "id": "t-multi",
            "kind": "multi",
            "q": "retry backoff",
            "targets": [shas["retry1"], f"{shas['retry2']}:src/net.py"],
        },
        {"id": "t-none", "kind": "none", "q": "teleport the database to the moon", "targets": []},
        *(extra or []),
    ]
    path = root / "dev" / "demo.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "repo": "x/demo",
        "url": "",
        "commit": shas["pin"],
        "set": "dev",
        "written_by": "test",
        "questions": questions,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def demo_set(
    tmp_path: Path, extra: Callable[[dict[str, str]], list[dict[str, Any]]] | None = None, **history: bool
) -> tuple[Any, dict[str, str], list[str]]:
    """The script, small_history's shas and the arguments that point it at that history and its question
    file (with EXTRA(shas) questions added)."""
    ev = load_script()
    mirror, shas = small_history(tmp_path, **history)
    questions = tmp_path / "questions"
    question_file(questions, shas, extra=extra(shas) if extra else None)
    return (
        ev,
        shas,
        ["--questions", str(questions), "--repo", f"demo={mirror}", "--work", str(tmp_path / "work")],
    )


@pytest.mark.slow
def test_harness_grades_a_real_repository_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = load_script()
    mirror, shas = small_history(tmp_path)
    questions = tmp_path / "questions"
    question_file(questions, shas)
    out = tmp_path / "out.json"
    args = ["--questions", str(questions), "--repo", f"demo={mirror}", "--work", str(tmp_path / "work")]
    assert ev.main([*args, "--details", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "demo: sync took" in printed.err
    assert "| demo | **all** | 4 |" in printed.out  # the none question is graded apart
    data = json.loads(out.read_text(encoding="utf-8"))
    ranks = {q["id"]: q["ranks"] for q in data["questions"]}
    # The obvious question is first in every mode, the naive baseline included.
    assert ranks["t-obvious"] == {"baseline": 1, "bm25": 1, "hybrid": 1}
    # The function name lives only in the code change: found through the diff node, not by the baseline.
    assert ranks["t-code"]["bm25"] == 1 and ranks["t-code"]["baseline"] is None
    # Docs are out of the baseline's reach; the doc section is found by the library.
    assert ranks["t-doc"]["baseline"] is None and ranks["t-doc"]["hybrid"] == 1
    assert ranks["t-multi"]["bm25"] == 1
    repo = data["repos"]["demo"]
    assert repo["pin"] == shas["pin"] and repo["sync_seconds"] > 0
    assert repo["all"]["bm25"]["r1"] == 1.0 and repo["all"]["hybrid"]["packed"] == 1.0
    # The commit after the pin never reached the store: the `none` question has nothing true to find.
    clone = tmp_path / "work" / f"demo-{shas['pin'][:12]}" / "repo"
    assert git(clone, "rev-parse", "HEAD") == shas["pin"]
    assert git(clone, "for-each-ref") == ""  # no ref past the pin (or at all: HEAD is detached)
    from nexusmem import project

    with project.load(clone).open_store(readonly=True) as store:
        assert {n.ref for n in store.iter_nodes("git_commit")} == {
            shas[k] for k in shas if k not in ("pin", "after")
        }
    assert repo["none"]["n"] == 1

    # --reuse skips the clone and the sync, and grades the same.
    assert ev.main([*args, "--reuse", "--json", str(out)]) == 0
    assert "reusing the store" in capsys.readouterr().err
    assert {q["id"]: q["ranks"] for q in json.loads(out.read_text())["questions"]} == ranks


def test_bad_targets_stop_with_the_question_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ev = load_script()
    mirror, shas = small_history(tmp_path)
    questions = tmp_path / "questions"
    base = ["--questions", str(questions), "--repo", f"demo={mirror}", "--check"]
    bad = {
        "past the pin": ([shas["after"]], "not reachable from the pin"),
        "untouched path": ([f"{shas['empty']}:src/net.py"], "does not touch 'src/net.py'"),
        "missing heading": (["README.md#Proxies"], "no non-empty section 'Proxies' in README.md"),
        "missing file": (["docs/nothing.md#Intro"], "no file 'docs/nothing.md'"),
        "short sha": ([shas["empty"][:12]], "is not a full sha, sha:path or path#Heading"),
    }
    for label, (targets, message) in bad.items():
        question_file(
            questions, shas, extra=[{"id": "t-bad", "kind": "code", "q": label, "targets": targets}]
        )
        assert ev.main(base) == 2, label
        err = capsys.readouterr().err
        assert "question t-bad" in err and message in err, (label, err)
    # A good file passes, and --check shows the words a symptom question shares with its commit.
    question_file(questions, shas)
    assert ev.main(base) == 0
    printed = capsys.readouterr().out
    assert "t-obvious: shares 4: crash, config, file, empty" in printed


def test_fresh_set_is_read_by_fresh_and_all_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fresh set (new repositories, written apart) is chosen with --set fresh and joins --set all."""
    ev = load_script()
    mirror, shas = small_history(tmp_path)
    questions = tmp_path / "questions"
    dev = question_file(questions, shas)
    data = json.loads(dev.read_text(encoding="utf-8"))
    dev.unlink()
    data["set"] = "fresh"
    data["questions"] = [dict(q, id=q["id"].replace("t-", "f-")) for q in data["questions"]]
    (questions / "fresh").mkdir()
    (questions / "fresh" / "demo.json").write_text(json.dumps(data), encoding="utf-8")
    base = ["--questions", str(questions), "--repo", f"demo={mirror}", "--check"]
    assert ev.main([*base, "--set", "fresh"]) == 0
    printed = capsys.readouterr()
    assert "fresh/demo.json: 5 questions, every target valid" in printed.err
    assert "f-obvious: shares 4" in printed.out
    assert ev.main([*base, "--set", "dev"]) == 2  # no dev file for demo any more
    assert "no question file for 'demo'" in capsys.readouterr().err
    question_file(questions, shas)
    assert ev.main([*base, "--set", "all"]) == 0
    err = capsys.readouterr().err
    assert "dev/demo.json: 5 questions" in err and "fresh/demo.json: 5 questions" in err


def test_recent_work_questions_name_what_was_planted(tmp_path: Path) -> None:
    ev = load_script()
    _data, questions = ev.load_recent()
    recent = [q for q in questions if q.kind == "recent"]
    assert len(recent) >= 15 and any(q.kind == "none" for q in questions)
    cues = ("yesterday", "last week", "hours ago", "today", "this morning", "just now", "last")
    assert sum(any(c in q.q for c in cues) for q in recent) >= 12
    broken = json.loads(ev.RECENT_FILE.read_text(encoding="utf-8"))
    broken["questions"][0]["targets"] = ["shell:pytest tests/test_refund.py -k partial_refund@5h"]
    path = tmp_path / "recent.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ev.EvalError, match=r"question recent-01: target .* names nothing planted"):
        ev.load_recent(path)
    # Every recent-work set (recent.json … recent8.json) names only what it plants, with both kinds.
    files = sorted(ev.QUESTIONS_DIR.glob("recent*.json"))
    assert len(files) >= 8
    for other in files:
        _data, asked = ev.load_recent(other)
        assert {q.kind for q in asked} == {"recent", "none"}, other


@pytest.mark.slow
def test_a_target_packed_as_the_copy_of_another_file_counts_as_packed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A doc section kept in two files is packed once, as the README's, naming the template's copy in
    `also_in`: a question labelled with the template's section still finds its text in the answer."""
    twin = {
        "id": "t-twin",
        "kind": "doc",
        "q": "route requests through a proxy",
        "targets": [".meta/README.md#Proxy settings"],
    }
    ev, _shas, args = demo_set(tmp_path, lambda shas: [twin], template=True)
    out = tmp_path / "out.json"
    assert ev.main([*args, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    graded = {q["id"]: q for q in json.loads(out.read_text(encoding="utf-8"))["questions"]}
    assert graded["t-twin"]["packed"]["hybrid"] is True and graded["t-doc"]["packed"]["hybrid"] is True
    assert "packed once for its copies elsewhere: 2 of 6 (2 copies not packed again)" in printed


ABOVE = SCRIPT.parent / "eval_above.py"
TRANSLATIONS = SCRIPT.parent / "eval_translations.py"


@pytest.mark.slow
def test_what_sits_above_an_answer_is_counted_from_the_synced_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eval_above.py` reads the stores `eval_real.py --work` synced: for a question answered 2nd, it counts
    the features of the answer and of the change above it; with nothing synced it says so and stops."""
    ev, _shas, args = demo_set(
        tmp_path,
        lambda shas: [{"id": "t-second", "kind": "code", "q": "retry backoff", "targets": [shas["retry1"]]}],
    )
    assert ev.main([*args, "--no-pack", "--details"]) == 0
    details = capsys.readouterr().out
    row = next(line for line in details.splitlines() if line.startswith("| t-second |"))
    assert row.split(" | ")[5] == "3", row  # the hybrid rank: below the later change and its diff
    above = load_script(ABOVE)
    assert above.main(args) == 0
    out = capsys.readouterr().out
    assert "code: 1 questions answered 2nd to 10th, 2 nodes ranked above their answers" in out, out
    # Both retry changes touched one file (src/net.py), neither says it fixes something.
    assert "| the change touched one file | 1.00 | 1.00 |" in out
    assert "| the subject says it fixes something | 0.00 | 0.00 |" in out
    assert above.main([*args[:-1], str(tmp_path / "nothing")]) == 1
    assert "no synced store for demo" in capsys.readouterr().err


@pytest.mark.slow
def test_the_translated_pages_in_the_answers_are_counted_from_the_synced_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eval_translations.py` reads the stores `eval_real.py --work` synced and counts the packed items under
    a language folder, with the translation rule off and on (a small store packs every match either way),
    and leaves the rule as it found it."""
    asked = {
        "id": "t-en",
        "kind": "doc",
        "q": "how do I route the requests through a proxy",
        "targets": ["docs/en/proxy.md#Proxy settings"],
    }
    ev, _shas, args = demo_set(tmp_path, lambda shas: [asked], translated=True)
    assert ev.main([*args, "--no-pack"]) == 0
    capsys.readouterr()
    script = load_script(TRANSLATIONS)
    from nexusmem.retrieve import history

    factor = history.TRANSLATION_FACTOR
    assert script.main(args) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| demo |"))
    off, on = (int(cell.split(" of ")[0]) for cell in row.strip(" |").split(" | ")[2:4])
    assert off >= 1 and on >= 1, row  # the Japanese page matches the proxy questions
    assert factor == history.TRANSLATION_FACTOR
    assert script.main([*args[:-1], str(tmp_path / "nothing")]) == 1
    assert "no synced store for demo" in capsys.readouterr().err


LEARN = SCRIPT.parent / "learn_rerank.py"


def test_the_rerank_learner_learns_what_the_labels_say() -> None:
    """learn_rerank.fit on rows where the answer is always the small fix ranked just below a large change:
    the fitted step puts it first, on sets it was not fitted on too."""
    import numpy as np

    from nexusmem.retrieve import rerank

    learn = load_script(LEARN)

    def features(score: float, kind: str, lines: int, fix: bool, place: int) -> list[float]:
        kinds = [float(kind == k) for k in ("git_commit", "code_diff", "doc_section")]
        return [
            np.log(score),
            *kinds,
            0.0,
            float(np.log1p(lines)),
            float(fix),
            0.5,
            0.0,
            float(np.log1p(place)),
            0.5,  # coverage, lexical and semantic shares: alike, so only the labels can tell the two apart
            0.5,
            0.0,
            0.0,  # neither names an issue
            0.0,  # nor an operating system
            0.0,  # nor says the question's learned kin
            0.0,  # the question reads as neither the docs' nor history's
            *(0.0,) * 4,  # texts of no length: only the labels can tell the two apart
        ]

    def row(name: str) -> Any:
        x = [
            features(1.0, "git_commit", 4000, False, 0),
            features(0.95, "git_commit", 6, True, 1),
            features(0.9, "doc_section", 0, False, 2),
        ]
        return learn.Row(set=name, rank=2, met=["always", "failure"], x=x, hit=[False, True, False])

    train = [row(f"s{i}") for i in range(4) for _ in range(10)]
    held = [row("other") for _ in range(10)]
    assert learn.score(np, held, None) == (0.5, 1.0)  # the answer is second: MRR .5
    model = learn.fit(np, train, l2=1e-3, iterations=100, rate=0.05)
    assert set(model.weights) == set(rerank.CONDITIONS)
    assert learn.score(np, held, model) == (1.0, 1.0)
    # A question the step does not apply to keeps its rank.
    pinned = learn.Row(set="other", rank=3, met=["always"], x=None, hit=None)
    assert learn.new_rank(np, pinned, model) == 3


def test_the_rerank_learners_hidden_units_learn_what_no_weighted_sum_can() -> None:
    """Rows where a fix that names an issue is the answer, and so is a change that does neither, but not one
    that does only one of the two (an "exclusive or" of two features): no weights over the features put the
    answer first in every list, the hidden units do, on sets they were not fitted on too."""
    import numpy as np

    from nexusmem.retrieve import rerank

    learn = load_script(LEARN)

    def node(fix: bool, numbered: bool) -> list[float]:
        x = [0.0] * len(rerank.FEATURES)
        x[rerank.FEATURES.index("commit")] = 1.0
        x[rerank.FEATURES.index("fix")] = float(fix)
        x[rerank.FEATURES.index("numbered")] = float(numbered)
        return x

    pairs = [  # (the answer, the other), the answer second as ranked
        ((True, True), (True, False)),
        ((True, True), (False, True)),
        ((False, False), (True, False)),
        ((False, False), (False, True)),
    ]

    def row(name: str, answer: tuple[bool, bool], other: tuple[bool, bool]) -> Any:
        return learn.Row(set=name, rank=2, met=["always"], x=[node(*other), node(*answer)], hit=[False, True])

    train = [row(f"s{i}", *pair) for i in range(4) for pair in pairs for _ in range(5)]
    held = [row("other", *pair) for pair in pairs]
    linear = learn.fit(np, train, l2=1e-3, iterations=300, rate=0.05)
    assert learn.score(np, held, linear)[0] < 1.0
    hidden = learn.fit(np, train, l2=1e-3, iterations=300, rate=0.05, units=4)
    assert learn.score(np, held, hidden) == (1.0, 1.0)
    # A feature the hidden units may not read (rerank.LINEAR, here "fix") enters no interaction: its hidden
    # weights stay 0, and the "exclusive or" is out of reach again.
    alone = learn.fit(np, train, l2=1e-3, iterations=300, rate=0.05, units=4, linear=("fix",))
    assert not alone.hidden[:, 2 + rerank.FEATURES.index("fix")].any()
    assert learn.score(np, held, alone)[0] < 1.0


def test_the_step_computes_what_the_learner_scored() -> None:
    """The values rerank.py gives a list are those learn_rerank.py scored its shipped model by, hidden units
    included: the figures the learner prints are the product's."""
    import numpy as np

    from nexusmem.retrieve import rerank

    learn = load_script(LEARN)
    assert rerank.HIDDEN, "the step ships a hidden layer"
    x = [[float((i * 7 + j * 3) % 5) / 2 - 0.7 for j in range(len(rerank.FEATURES))] for i in range(6)]
    for met in (["always"], ["always", "failure", "names_code"], ["always", "usage"]):
        ours = rerank.values(x, met)
        theirs = learn.values(np, learn.shipped(np), np.array(x), met)
        assert np.allclose(ours, theirs)
        linear = [sum(w * v for w, v in zip(rerank.weights_for(met), row)) for row in x]
        assert not np.allclose(ours, linear)  # the hidden units count


@pytest.mark.slow
def test_the_rerank_learner_reads_the_synced_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`learn_rerank.py` reads the stores `eval_real.py --work` synced, saves two rows per answerable question
    (its list ranked with the vectors and by the words alone) with the step's own features, prints the
    WEIGHTS and HIDDEN tables; with nothing synced it says so and stops."""
    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    capsys.readouterr()
    from nexusmem.retrieve import rerank

    learn = load_script(LEARN)
    rows = tmp_path / "rows.jsonl"
    assert learn.main([*args, "--folds", "0", "--iterations", "20", "--save", str(rows)]) == 0
    out = capsys.readouterr().out
    assert "4 answerable questions ranked with the vectors and 4 by the words alone, 1 sets" in out
    assert (
        "WEIGHTS: dict[str, tuple[float, ...]] = {" in out
        and "HIDDEN: tuple[tuple[float, ...], ...] = (" in out
    )
    saved = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    assert len(saved) == 8 and all(len(x) == len(rerank.FEATURES) for r in saved if r["x"] for x in r["x"])
    assert sorted(r["words_only"] for r in saved) == [False] * 4 + [True] * 4
    assert (
        learn.main(["--rows", str(rows), "--work", str(tmp_path), "--folds", "0", "--iterations", "5"]) == 0
    )
    with pytest.raises(SystemExit, match="no synced store for demo"):
        learn.main([*args[:-1], str(tmp_path / "nothing")])


@pytest.mark.slow
def test_the_rerank_learner_ranks_each_set_with_kin_learned_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learned kin are learned from the labelled sets, and the step learns how far to trust them: a set's
    rows are ranked with the kin learned from the sets outside its fold (as a repository the kin never saw
    gets them), never with kin its own questions made; the same for the table that says how likely a
    question's answer is a doc section (asks_docs). `--kin-folds 0` ranks with the shipped ones."""
    from nexusmem.retrieve import rerank, thesaurus

    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    learn_kin = load_script(LEARN_KIN)  # the module learn_rerank.py imports
    monkeypatch.setattr(learn_kin, "MIN_REPOSITORIES", 1)
    learn = load_script(LEARN)
    parsed = learn.eval_real.synced_stores_parser(None).parse_args([*args, "--set", "dev"])
    examples = learn_kin.examples(parsed)
    assert learn.held_out_kin(parsed, 5) == {"dev": {}}  # learned without the one set there is
    in_sample = learn_kin.as_table(learn_kin.learn(learn_kin.without(examples, set())))
    assert {pair.split(":")[0] for pair in in_sample["defined"].split()} == {"tidy", "loader"}
    kin_file = tmp_path / "kin.txt"
    kin_file.write_text(learn_kin.dump(learn_kin.learn(learn_kin.without(examples, set()))), encoding="utf-8")
    monkeypatch.setattr(thesaurus, "LEARNED_KIN_FILE", kin_file)
    thesaurus.learned_kin.cache_clear()
    kin, docs = rerank.FEATURES.index("kin"), rerank.FEATURES.index("asks_docs")

    def seen(*extra: str) -> tuple[float, float]:
        """The most of the kin, and of a doc section's asks_docs score, that the rows saw."""
        rows = tmp_path / "rows.jsonl"
        assert learn.main([*args, "--folds", "0", "--iterations", "2", "--save", str(rows), *extra]) == 0
        saved = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
        xs = [x for r in saved if r["x"] for x in r["x"]]
        return max(x[kin] for x in xs), max(abs(x[docs]) for x in xs)

    try:
        assert seen() == (0.0, 0.0)  # the kin and the docs table are learned from other sets: none here
        held_kin, shipped_docs = seen("--kin-folds", "0")
        assert held_kin > 0.0 and shipped_docs > 0.0
    finally:
        thesaurus.learned_kin.cache_clear()
    capsys.readouterr()


WEAK = SCRIPT.parent / "learn_weak.py"


def test_the_weak_learner_learns_what_the_labels_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """learn_weak on rows where a question about nothing has a flat list with its heaviest word absent and an
    answerable one a first result that stands out: the fitted judgement flags the first kind on sets it was
    not fitted on and few of the second, within the share of false flags asked for."""
    from nexusmem.retrieve import query

    learn = load_script(WEAK)
    rng = random.Random(3)

    def row(name: str, none: bool) -> dict[str, Any]:
        heaviest = rng.uniform(0.15, 0.35) if none else rng.uniform(0.0, 0.2)
        flat = rng.uniform(0.7, 0.95) if none else rng.uniform(0.3, 0.75)
        x = [heaviest, 0.5, 0.0, 0.5, 0.5, 1.0, 0.5, heaviest, flat, heaviest * 0.5]
        return {
            "set": name,
            "id": f"{name}-{rng.random()}",
            "vectors": True,
            "none": none,
            "empty": False,
            "answered": False,
            "arrival": False,
            "x": x,
        }

    rows = [row(f"s{i}", i % 10 == 0) for i in range(600)]
    rows += [dict(r, vectors=False) for r in rows]
    assert len(query.WEAK_FEATURES) == len(rows[0]["x"])
    saved = tmp_path / "rows.jsonl"
    saved.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert learn.main(["--rows", str(saved), "--work", str(tmp_path), "--false-flags", "0.05"]) == 0
    out = capsys.readouterr().out
    held = re.search(r"learned, held out: `none` flagged ([.\d]+) .*answerable flagged ([.\d]+)", out)
    assert held is not None, out
    assert float(held.group(1)) > 0.6 and float(held.group(2)) <= 0.08
    assert "WEAK_WEIGHTS: tuple[float, ...] = (" in out and "WEAK_LEXICAL_BIAS = " in out


def test_the_weak_learner_reads_the_synced_stores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`learn_weak.py` reads the stores `eval_real.py --work` synced and saves a row per question, `none`
    ones too, with and without vectors, holding the judgement's own features; one set whose only `none`
    question is judged without the model (weak by a fixed rule) leaves it nothing to fit, and it says so."""
    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    capsys.readouterr()
    from nexusmem.retrieve import query

    learn = load_script(WEAK)
    rows = tmp_path / "rows.jsonl"
    with pytest.raises(SystemExit, match="need `none` questions and answerable ones"):
        learn.main([*args, "--save", str(rows)])
    saved = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    assert (
        len(saved) == 10
        and sum(r["none"] for r in saved) == 2
        and {r["vectors"] for r in saved} == {True, False}
    )
    assert all(len(r["x"]) == len(query.WEAK_FEATURES) for r in saved if r["x"] is not None)
    assert "fewer than five sets" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no synced store for demo"):
        learn.main([*args[:-1], str(tmp_path / "nothing")])


def test_check_reads_a_crlf_page_as_the_docs_collector_does(tmp_path: Path) -> None:
    """A reStructuredText page with Windows line ends (bottle's docs/routing.rst: CRLF text, LF underlines)
    is cut into its sections by the collector; --check must find the same headings, not one untitled
    section (it refused a valid target as "no non-empty section")."""
    ev = load_script()
    work = tmp_path / "src"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    page = "Request Routing\r\n===============\r\n\r\nIntro.\r\n\r\nWildcard Filters\n----------------\r\n\r\nUse <id:int>.\r\n"
    (work / "docs").mkdir()
    (work / "docs" / "routing.rst").write_bytes(page.encode())
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "docs")
    pin = git(work, "rev-parse", "HEAD")
    headings = ev.PinnedRepo(work, pin).headings("docs/routing.rst")
    assert headings is not None and "Wildcard Filters" in headings


def test_a_release_heading_whose_text_is_in_its_subsections_is_a_doc_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`CHANGELOG.md#2.0.0` over `### Features` and `### Fixes` with bullets was refused by --check as "no
    non-empty section '2.0.0'", though the sync stores the entries under it ("2.0.0 › Features"): it is a valid
    target, hit by those entries. A guide's heading with only subheadings (`README.md#Usage`) is still none."""
    ev = load_script()
    work = tmp_path / "src"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    changelog = (
        "# Changelog\n\n## 2.0.0\n\n### Features\n\n- Add the frobnicate command (#12)\n\n"
        "### Fixes\n\n- Fix the crash on an empty config file (#13)\n\n## 1.0.0\n\n- First release\n"
    )
    readme = "# Demo\n\n## Usage\n\n### Install\n\npip install demo\n"
    pin = commit(work, "Release 2.0.0", {"CHANGELOG.md": changelog, "README.md": readme})
    questions = tmp_path / "questions" / "dev" / "demo.json"
    questions.parent.mkdir(parents=True)

    def write(targets: list[str]) -> None:
        question = {"id": "t-release", "kind": "doc", "q": "what changed in 2.0.0", "targets": targets}
        data = {"repo": "x/demo", "url": "", "commit": pin, "set": "dev", "written_by": "test"}
        questions.write_text(json.dumps({**data, "questions": [question]}), encoding="utf-8")

    args = [
        "--questions",
        str(tmp_path / "questions"),
        "--repo",
        f"demo={work}",
        "--work",
        str(tmp_path / "w"),
    ]
    write(["CHANGELOG.md#2.0.0"])
    assert ev.main([*args, "--check"]) == 0, capsys.readouterr().err
    write(["README.md#Usage"])
    assert ev.main([*args, "--check"]) == 2
    assert "no non-empty section 'Usage' in README.md" in capsys.readouterr().err

    # After the sync, the release's entries are what hits it.
    write(["CHANGELOG.md#2.0.0"])
    out = tmp_path / "out.json"
    assert ev.main([*args, "--no-pack", "--json", str(out)]) == 0
    assert "has no node in the store" not in capsys.readouterr().err
    ranks = {q["id"]: q["ranks"] for q in json.loads(out.read_text(encoding="utf-8"))["questions"]}
    assert ranks["t-release"]["hybrid"] is not None, ranks


LEARN_MAP = SCRIPT.parent / "learn_question_map.py"


def test_the_question_map_learner_learns_what_the_labels_say(tmp_path: Path) -> None:
    """learn_question_map on stores whose questions are their answers' vectors seen through the same twist in
    every project (as a report's words sit apart from a fix's the same way everywhere): the map fitted on the
    other sets puts the answers first on sets it never saw, where the plain vectors miss them."""
    np = pytest.importorskip("numpy")
    learn = load_script(LEARN_MAP)
    rng = np.random.default_rng(3)
    dim, nodes, asked = 16, 120, 15
    twist, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    for s in range(10):
        d = rng.normal(size=(nodes, dim))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        answers = rng.choice(nodes, asked, replace=False)
        q = d[answers] @ twist.T + rng.normal(0, 0.05, size=(asked, dim))
        np.savez(
            tmp_path / f"s{s}__demo.npz",
            D=d.astype(np.float16),
            Q=(q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32),
            T=answers[:, None],
            set=np.array(f"s{s}"),
            kinds=np.array(["symptom"] * asked),
        )
    stores = learn.load(tmp_path)
    held = [s for s in stores if s["set"] in ("s0", "s1")]
    m = learn.fit(np, [s for s in stores if s not in held], l2=1e-3, iterations=150, rate=0.03)
    plain = np.mean([r for s in held for r in learn.reciprocal_ranks(np, s, np.eye(dim))])
    mapped = np.mean([r for s in held for r in learn.reciprocal_ranks(np, s, m)])
    assert plain < 0.3 and mapped > 0.8, (plain, mapped)


def test_the_question_map_learner_reads_the_synced_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`learn_question_map.py` reads the stores `eval_real.py --work` synced: each answerable question's
    vector as the query embeds it, unmapped, beside the store's node vectors and its answers' rows; it learns
    from what it saved without a store, and `--write` writes the map the product reads."""
    np = pytest.importorskip("numpy")
    from nexusmem.embed import builtin, question_map

    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    capsys.readouterr()
    learn = load_script(LEARN_MAP)
    data = tmp_path / "data"
    assert learn.main([*args, "--folds", "0", "--iterations", "3", "--save", str(data)]) == 0
    assert "4 answerable questions, 1 stores, 1 sets" in capsys.readouterr().out
    (saved,) = data.glob("*.npz")
    z = np.load(saved)
    assert z["Q"].shape == (4, builtin.DIM) and np.allclose(np.linalg.norm(z["Q"], axis=1), 1, atol=1e-4)
    assert z["T"].shape[0] == 4 and ((z["T"] == -1) | ((z["T"] >= 0) & (z["T"] < len(z["D"])))).all()
    assert (z["T"][:, 0] >= 0).all()
    target = tmp_path / "map.bin"
    monkeypatch.setattr(question_map, "QUESTION_MAP_FILE", target)
    assert (
        learn.main(
            ["--data", str(data), "--work", str(tmp_path), "--folds", "0", "--iterations", "3", "--write"]
        )
        == 0
    )
    assert target.stat().st_size == 4 * builtin.DIM * builtin.DIM
    with pytest.raises(SystemExit, match="no synced store for demo"):
        learn.main([*args[:-1], str(tmp_path / "nothing")])


def test_recent_work_planted_too_early_in_the_day_is_flagged() -> None:
    """Planted earlier in the local day than its work of the last hours is old, some of "today's" recent work
    falls on yesterday and the recent-work sets score lower (recent .771 -> .692 at 00:38 UTC, recent2 .700
    -> .626 at 02:36): whoever re-runs them then is told, with the time after which to run them, and later in
    the day nothing is said. Each shipped set is flagged at 02:00, none at noon."""
    import time

    mod = load_script()
    was = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        day = 1_764_979_200  # 2025-12-06 00:00 UTC
        planted = {
            "commits": [{"ago": "190h"}, {"ago": "5h"}],
            "shell": [{"ago": "340m"}, {"ago": "26h"}, {"ago": "30m"}],
        }
        same_day = mod.same_day_seconds(planted)
        assert same_day == 340 * 60
        early = mod.early_day_note(day + 156 * 60, same_day)
        assert early is not None and "02:36" in early and "after 05:40" in early
        assert mod.early_day_note(day + 339 * 60, same_day) is not None
        assert mod.early_day_note(day + 340 * 60, same_day) is None
        assert mod.early_day_note(day + 15 * 3600, same_day) is None
        assert mod.same_day_seconds({"commits": [{"ago": "2d"}], "shell": []}) == 0
        for name in ("recent", "recent2", "recent3", "recent4"):
            data, _ = mod.load_recent(mod.RECENT_FILE.with_name(f"{name}.json"))
            assert mod.early_day_note(day + 2 * 3600, mod.same_day_seconds(data["planted"])) is not None
            assert mod.early_day_note(day + 12 * 3600, mod.same_day_seconds(data["planted"])) is None
    finally:
        if was is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = was
        time.tzset()


LEARN_KIN = SCRIPT.parent / "learn_kin.py"


@pytest.fixture
def kin_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A learned-kin file of the test's own that the thesaurus reads in place of the shipped one."""
    from nexusmem.retrieve import thesaurus

    path = tmp_path / "kin.txt"
    monkeypatch.setattr(thesaurus, "LEARNED_KIN_FILE", path)
    thesaurus.learned_kin.cache_clear()
    yield path
    thesaurus.learned_kin.cache_clear()


def test_learned_kin_are_what_users_of_several_projects_say(kin_file: Path) -> None:
    """A question word's kin are the words its answers' messages hold far more often than messages do, said
    about three repositories or more: one project's own name for a thing, or a word every fix holds, is not
    one. What the learner writes, the thesaurus reads; a line it cannot read counts for nothing."""
    from nexusmem.retrieve import thesaurus

    learn = load_script(LEARN_KIN)
    examples = [(f"r{i}", {"cache", "folder"}, {"create", "directory", "fix"}) for i in range(3)]
    examples += [(f"r{i}", {"widget", "slow"}, {"frobnicator", "fix"}) for i in range(2)]
    examples += [(f"r{i % 5}", {"other", f"w{i}"}, {"fix", f"v{i}"}) for i in range(40)]
    kin = learn.learn(examples)
    assert [word for word, _ in kin["folder"]][:2] == ["create", "directory"]
    assert "widget" not in kin and "slow" not in kin  # said about two repositories only
    assert all(word != "fix" for row in kin.values() for word, _ in row)  # every answer holds it
    kin_file.write_text(learn.dump(kin) + "hangs deadlock:oops loop:2\n", encoding="utf-8")
    assert thesaurus.learned(["my", "cache", "folder"], {"cache", "folder"}) == ["create", "directory"]
    assert thesaurus.learned(["folder"], {"create"}) == ["directory"]
    assert thesaurus.learned(["hangs"], set()) == ["loop"]
    assert "directory" in thesaurus.expand(["folder"]) and "directory" not in thesaurus.expand(
        ["folder"], kin=False
    )
    kin_file.unlink()
    thesaurus.learned_kin.cache_clear()
    assert thesaurus.learned(["folder"], set()) == []  # no file: the groups alone answer


def test_the_kin_learner_reads_the_synced_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`learn_kin.py` pairs each answerable question's words with its labelled commits' message words, from
    the stores `eval_real.py --work` synced; one repository's questions make no kin at the shipped
    threshold; `--leave-out` leaves a set's questions out."""
    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    capsys.readouterr()
    learn = load_script(LEARN_KIN)
    out = tmp_path / "kin.txt"
    assert learn.main([*args, "--out", str(out)]) == 0
    # t-obvious, t-code and t-multi name commits; t-doc a section and t-none nothing.
    assert "learn_kin: 3 questions, 0 words, 0 pairs" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8") == ""
    monkeypatch.setattr(learn, "MIN_REPOSITORIES", 1)
    assert learn.main([*args, "--out", str(out)]) == 0
    rows = dict(line.split(" ", 1) for line in out.read_text(encoding="utf-8").splitlines())
    assert {pair.split(":")[0] for pair in rows["defined"].split()} == {"tidy", "loader"}
    assert "backoff" not in rows["retry"]  # the question says it already
    assert learn.main([*args, "--leave-out", "dev", "--out", str(out)]) == 0
    assert "learn_kin: 0 questions" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no synced store for demo"):
        learn.main([*args[:-1], str(tmp_path / "nothing"), "--out", str(out)])


LEARN_ASKS_DOCS = SCRIPT.parent / "learn_asks_docs.py"


def test_the_docs_learner_learns_which_questions_the_docs_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """learn_asks_docs.py reads the question files alone: questions about three repositories that a doc
    section answers teach their words to count for the docs, those a commit answers against; a word only
    one repository's questions hold is not learned; what it writes, retrieve.asks_docs reads; each set is
    scored held out."""
    from nexusmem.retrieve import asks_docs

    sha = "a" * 40
    questions = tmp_path / "questions"
    (questions / "dev").mkdir(parents=True)
    args = ["--questions", str(questions), "--set", "dev"]
    for name in ("alpha", "beta", "gamma"):
        asked = [
            ("doc", "How do I configure the proxy settings?", ["README.md#Proxy"]),
            ("doc", "Where is the cache setting documented?", ["docs/cache.md#Cache"]),
            ("symptom", "Why does it crash on an empty file?", [sha]),
            ("symptom", "The upload crash came back after upgrading, what fixed it?", [sha]),
            ("code", f"When did {name}_widget start to crash?", [sha]),
        ]
        data = {
            "repo": f"o/{name}",
            "url": f"https://github.com/o/{name}",
            "commit": sha,
            "set": "dev",
            "questions": [
                {"id": f"{name}-{j}", "kind": kind, "q": q, "targets": targets}
                for j, (kind, q, targets) in enumerate(asked)
            ],
        }
        (questions / "dev" / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
        (tmp_path / name).mkdir()
        args += ["--repo", f"{name}={tmp_path / name}"]
    learn = load_script(LEARN_ASKS_DOCS)
    out = tmp_path / "asks_docs.txt"
    assert learn.main([*args, "--folds", "0", "--out", str(out)]) == 0
    assert "15 questions, 6 answered by a doc section" in capsys.readouterr().out
    table = asks_docs.parse(out.read_text(encoding="utf-8"))
    assert table["configure"] > 0 and table["documented"] > 0 and table["crash"] < 0
    assert "alpha_widget" not in table  # one repository's name for a thing
    monkeypatch.setattr(asks_docs, "LEARNED_FILE", out)
    asks_docs.learned.cache_clear()
    try:
        assert asks_docs.score("how do I configure retries?") > 0 > asks_docs.score("a crash on start")
    finally:
        asks_docs.learned.cache_clear()
    examples = learn.examples(learn.argparse.Namespace(questions=questions, set=["dev"], repo=args[5::2]))
    assert learn.held_out(examples, 5) == [(row, 0.0) for row in examples]  # no other set to learn from


HELD_OUT_ROWS = SCRIPT.parent / "held_out_rows.py"


def test_every_learned_part_can_be_held_out_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """held_out_rows.py ranks each fold of sets with the question map, the kin and the docs table learned
    without it, and saves rows learn_rerank.py fits from: with one set there is nothing else to learn from,
    so no kin and no docs score reach its rows, and the map is the identity (the vectors as they are)."""
    from nexusmem.retrieve import rerank

    ev, _shas, args = demo_set(tmp_path)
    assert ev.main([*args, "--no-pack"]) == 0
    held_out = load_script(HELD_OUT_ROWS)
    rows = tmp_path / "rows.jsonl"
    assert held_out.main([*args, "--set", "dev", "--save", str(rows)]) == 0
    assert "held_out_rows: 8 lists of 1 sets" in capsys.readouterr().out
    saved = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    xs = [x for r in saved if r["x"] for x in r["x"]]
    assert xs and all(len(x) == len(rerank.FEATURES) for x in xs)
    kin, docs = rerank.FEATURES.index("kin"), rerank.FEATURES.index("asks_docs")
    assert all(x[kin] == 0.0 and x[docs] == 0.0 for x in xs)
    learn = load_script(LEARN)
    assert (
        learn.main(["--rows", str(rows), "--work", str(tmp_path), "--folds", "0", "--iterations", "2"]) == 0
    )
    # A set no question file of the repositories names is left out of its fold, not an error.
    parsed = learn.eval_real.synced_stores_parser(None).parse_args([*args, "--set", "dev"])
    assert held_out.fold_args(parsed, {"heldout"}) is None
    assert held_out.fold_args(parsed, {"dev"}).repo == parsed.repo
