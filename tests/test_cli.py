"""The ``minitx`` command: train, sample, export, and one clear line for every bad input."""

from __future__ import annotations

import io
import os
import string
import subprocess
import sys

import pytest
import torch

from minitx import __version__, cli
from minitx.data.tokenizer import CharTokenizer
from minitx.nn.gpt import GPT, GPTConfig
from minitx.train.checkpoint import is_resumable, load_checkpoint, make_checkpoint, save_checkpoint

VOCAB = string.ascii_letters + " .,;:!?'-\n"
BLOCK = 16


@pytest.fixture(scope="module")
def ckpt_path(tmp_path_factory):
    """An untrained but valid checkpoint (sampling does not need a good model)."""
    tok = CharTokenizer.from_text(VOCAB)
    torch.manual_seed(0)
    cfg = GPTConfig(tok.vocab_size, block_size=BLOCK, n_layer=1, n_head=2, n_embd=16)
    path = tmp_path_factory.mktemp("cli") / "model.pt"
    return save_checkpoint(make_checkpoint(GPT(cfg), cfg, tok, preset="tiny"), path)


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *fragments, status=None):
    assert code != 0 if status is None else code == status
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("minitx") and "error" in lines[0]
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# ---------------------------------------------------------------- basics
def test_version_and_help(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"minitx {__version__}"
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "train" in out and "sample" in out and "export" in out
    code, out, _ = run([], capsys)
    assert code == 0 and "usage: minitx" in out
    code, out, _ = run(["sample", "--help"], capsys)
    assert code == 0 and "--top-p" in out and "--greedy" in out


def test_usage_errors_are_one_line(capsys):
    code, _, err = run(["fly"], capsys)
    assert_one_line_error(code, err, "invalid choice", status=2)
    code, _, err = run(["sample", "--checkpoint", "x.pt"], capsys)
    assert_one_line_error(code, err, "--prompt", status=2)
    code, _, err = run(
        ["sample", "--checkpoint", "x.pt", "--prompt", "a", "--top-k", "many"], capsys
    )
    assert_one_line_error(code, err, "--top-k", status=2)


# ---------------------------------------------------------------- sample
def test_sample_defaults_to_the_best_shipped_model(capsys):
    from minitx.data import shipped_model_path

    argv = ["sample", "--prompt", "ROMEO:", "--num-tokens", "30", "--seed", "2"]
    code, out, err = run(argv, capsys)
    assert code == 0 and err == ""
    large = str(shipped_model_path("large"))
    assert run([*argv, "--checkpoint", large], capsys)[1] == out
    small = str(shipped_model_path("small"))
    assert run([*argv, "--checkpoint", small], capsys)[1] != out


def test_sample_without_a_shipped_model_says_what_to_do(capsys, monkeypatch, tmp_path):
    from minitx.data import corpus as data

    monkeypatch.setattr(data, "_CHECKPOINTS", tmp_path)  # an install without its checkpoints
    code, _, err = run(["sample", "--prompt", "ROMEO:"], capsys)
    assert_one_line_error(code, err, "minigpt_shakespeare_large.pt", "pass a checkpoint path")
    with pytest.raises(ValueError, match=r"one of \['large', 'small'\], got 'huge'"):
        data.shipped_model_path("huge")


def test_sample_continues_the_prompt_reproducibly(ckpt_path, capsys):
    argv = ["sample", "--checkpoint", str(ckpt_path), "--prompt", "To be", "--num-tokens", "20"]
    code, out, err = run([*argv, "--seed", "3"], capsys)
    assert code == 0 and err == ""
    text = out[:-1]  # a final newline is added
    assert text.startswith("To be") and len(text) == len("To be") + 20
    assert set(text) <= set(VOCAB)
    assert run([*argv, "--seed", "3"], capsys)[1] == out
    assert run([*argv, "--seed", "4"], capsys)[1] != out


def test_greedy_and_filters(ckpt_path, capsys):
    base = ["sample", "--checkpoint", str(ckpt_path), "--prompt", "ab", "--num-tokens", "10"]
    g1 = run([*base, "--greedy", "--seed", "1"], capsys)
    g2 = run([*base, "--greedy", "--seed", "2"], capsys)
    assert g1[0] == 0 and g1[1] == g2[1]  # greedy ignores the seed
    code, out, _ = run([*base, "--top-k", "1", "--seed", "5"], capsys)
    assert code == 0 and out == g1[1]  # top-k 1 is greedy
    code, out, _ = run([*base, "--top-p", "0.9", "--temperature", "0.7"], capsys)
    assert code == 0 and out.startswith("ab")


def test_top_k_beyond_the_vocabulary_is_a_note(ckpt_path, capsys):
    code, out, err = run(
        ["sample", "--checkpoint", str(ckpt_path), "--prompt", "a", "--top-k", "1000"], capsys
    )
    assert code == 0 and "keeps every token" in err and out.startswith("a")


def test_long_prompt_is_cropped_with_a_note(ckpt_path, capsys):
    prompt = "a" * 10 + "b" * BLOCK
    code, out, err = run(
        ["sample", "--checkpoint", str(ckpt_path), "--prompt", prompt, "--num-tokens", "5"], capsys
    )
    assert code == 0
    assert f"the prompt has {len(prompt)} characters" in err and f"last {BLOCK}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert out.startswith(prompt) and len(out) == len(prompt) + 5 + 1
    # the model saw only the last BLOCK characters: same output as that prompt alone
    code, cropped, _ = run(
        ["sample", "--checkpoint", str(ckpt_path), "--prompt", "b" * BLOCK, "--num-tokens", "5"],
        capsys,
    )
    assert cropped[BLOCK:] == out[len(prompt) :]


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--prompt", "naïve {x}"], ["never saw", "'ï'", "'{'"]),
        (["--prompt", ""], ["--prompt is empty"]),
        (["--prompt", "a", "--temperature", "0"], ["--temperature must be a number > 0"]),
        (["--prompt", "a", "--temperature", "nan"], ["--temperature"]),
        (["--prompt", "a", "--temperature", "-1"], ["--temperature"]),
        (["--prompt", "a", "--top-k", "0"], ["--top-k must be >= 1"]),
        (["--prompt", "a", "--top-p", "0"], ["--top-p must be in (0, 1]"]),
        (["--prompt", "a", "--top-p", "1.5"], ["--top-p"]),
        (["--prompt", "a", "--num-tokens", "-3"], ["--num-tokens must be >= 0"]),
        (["--prompt", "a", "--greedy", "--temperature", "0.5"], ["--greedy", "--temperature"]),
        (["--prompt", "a", "--greedy", "--top-k", "5", "--top-p", "0.5"], ["--top-k, --top-p"]),
    ],
)
def test_bad_sampling_input(ckpt_path, capsys, extra, fragments):
    code, out, err = run(["sample", "--checkpoint", str(ckpt_path), *extra], capsys)
    assert_one_line_error(code, err, *fragments, status=2)
    assert out == ""


def test_missing_and_corrupt_checkpoints(tmp_path, ckpt_path, capsys):
    missing = tmp_path / "none.pt"
    code, _, err = run(["sample", "--checkpoint", str(missing), "--prompt", "a"], capsys)
    assert_one_line_error(code, err, "no checkpoint at", str(missing), status=1)
    text = tmp_path / "notes.pt"
    text.write_text("First Citizen:\nBefore we proceed\n")
    code, _, err = run(["sample", "--checkpoint", str(text), "--prompt", "a"], capsys)
    assert_one_line_error(code, err, "not a PyTorch checkpoint", status=1)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(ckpt_path.read_bytes()[:2000])
    code, _, err = run(["sample", "--checkpoint", str(cut), "--prompt", "a"], capsys)
    assert_one_line_error(code, err, "truncated or corrupt", str(cut), status=1)


# ---------------------------------------------------------------- export
def test_export(ckpt_path, tmp_path, capsys):
    dst = tmp_path / "small.pt"
    code, out, _ = run(
        ["export", "--checkpoint", str(ckpt_path), "--out", str(dst), "--dtype", "bfloat16"],
        capsys,
    )
    assert code == 0 and "exported" in out
    assert load_checkpoint(dst)["weights_dtype"] == "bfloat16"
    code, _, err = run(
        ["export", "--checkpoint", str(ckpt_path), "--out", str(dst), "--dtype", "int8"], capsys
    )
    assert_one_line_error(code, err, "--dtype", status=2)


# ---------------------------------------------------------------- train
def test_unknown_preset(capsys, tmp_path):
    code, _, err = run(["train", "--preset", "huge", "--out", str(tmp_path)], capsys)
    assert_one_line_error(code, err, "unknown preset 'huge'", "tiny, cpu, large, gpu", status=2)


def test_bad_max_steps_and_resume_without_a_run(capsys, tmp_path):
    code, _, err = run(["train", "--preset", "tiny", "--max-steps", "0"], capsys)
    assert_one_line_error(code, err, "--max-steps must be >= 1", status=2)
    code, _, err = run(["train", "--preset", "tiny", "--out", str(tmp_path), "--resume"], capsys)
    assert_one_line_error(code, err, "nothing to resume", status=2)


def test_missing_dataset(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MINITX_DATA", str(tmp_path / "empty"))
    code, _, err = run(
        ["train", "--preset", "tiny", "--out", str(tmp_path / "run"), "--no-download"], capsys
    )
    assert_one_line_error(code, err, "tinyshakespeare", "not at", status=1)


def test_corrupt_dataset(capsys, tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "tinyshakespeare.txt").write_text("To be or not to be\n")
    monkeypatch.setenv("MINITX_DATA", str(folder))
    code, _, err = run(
        ["train", "--preset", "tiny", "--out", str(tmp_path / "run"), "--no-download"], capsys
    )
    assert_one_line_error(code, err, "not the expected file", status=1)


def test_train_then_sample(capsys, tmp_path, shakespeare):
    out_dir = tmp_path / "run"
    argv = ["train", "--preset", "tiny", "--out", str(out_dir), "--max-steps", "6", "--no-progress"]
    code, out, err = run([*argv, "--export", str(tmp_path / "small.pt")], capsys)
    assert code == 0, err
    assert "preset tiny" in out and "1,003,854 train / 111,540 val" in out and "done: step 6" in out
    ckpt = load_checkpoint(out_dir / "ckpt.pt")
    assert is_resumable(ckpt) and ckpt["trainer"]["step"] == 6 and ckpt["preset"] == "tiny"
    assert ckpt["model_config"]["vocab_size"] == 65
    assert not is_resumable(load_checkpoint(tmp_path / "small.pt"))
    # a second run into the same folder must not overwrite it silently
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, "exists", "--resume", status=2)
    code, _, err = run(
        ["train", "--preset", "tiny", "--out", str(out_dir), "--resume", "--seed", "1"], capsys
    )
    assert_one_line_error(code, err, "--seed cannot change a resumed run", status=2)
    # resuming under another preset is refused
    code, _, err = run(["train", "--preset", "cpu", "--out", str(out_dir), "--resume"], capsys)
    assert_one_line_error(code, err, "preset 'tiny'", status=2)
    code, out, _ = run(
        [
            "sample",
            "--checkpoint",
            str(out_dir / "ckpt.pt"),
            "--prompt",
            "ROMEO:",
            "--num-tokens",
            "8",
        ],
        capsys,
    )
    assert code == 0 and out.startswith("ROMEO:") and len(out) == len("ROMEO:") + 8 + 1


@pytest.mark.parametrize("choice, compiled", [("on", True), ("off", False), ("auto", False)])
def test_compile_choice_reaches_the_trainer(
    choice, compiled, capsys, tmp_path, monkeypatch, shakespeare
):
    """--compile on compiles on a CPU too; auto leaves the CPU uncompiled (the runtime's rule)."""
    compiled_models = []

    def fake_compile(model, *args, **kwargs):  # record instead of invoking a C++ compiler
        compiled_models.append(model)
        return model

    monkeypatch.setattr(torch, "compile", fake_compile)
    argv = ["train", "--preset", "tiny", "--out", str(tmp_path / choice), "--max-steps", "2",
            "--no-progress", "--device", "cpu", "--compile", choice]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert [type(m) for m in compiled_models] == ([GPT] if compiled else [])
    assert (", compiled" in out) == compiled and "done: step 2" in out


def test_compile_choice_must_be_known(capsys):
    code, _, err = run(["train", "--compile", "yes"], capsys)
    assert_one_line_error(code, err, "--compile", "invalid choice: 'yes'", "'on'", status=2)


def test_subprocess_exit_status_and_stderr(tmp_path):
    """The installed entry point behaves the same: one line on stderr, status 1."""
    bad = tmp_path / "bad.pt"
    bad.write_text("not a checkpoint")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("MINITX_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "minitx.cli", "sample", "--checkpoint", str(bad), "--prompt", "a"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert_one_line_error(proc.returncode, proc.stderr, "not a PyTorch checkpoint", str(bad))


# ---------------------------------------------------------------- sample: KV cache
def test_sample_uses_the_kv_cache_unless_no_cache(ckpt_path, capsys, monkeypatch):
    seen = []
    real = GPT._next_logits_fn

    def spy(self, use_cache):
        seen.append(use_cache)
        return real(self, use_cache)

    monkeypatch.setattr(GPT, "_next_logits_fn", spy)
    base = ["sample", "--checkpoint", str(ckpt_path), "--prompt", "To be", "--num-tokens", "40"]
    for extra in (["--seed", "3"], ["--greedy"], ["--top-k", "5", "--top-p", "0.9"]):
        code, cached, err = run([*base, *extra], capsys)
        assert code == 0 and err == ""
        code, full, err = run([*base, *extra, "--no-cache"], capsys)
        assert code == 0 and err == ""
        assert cached == full  # same text, past the window (BLOCK) too
    assert seen == [True, False] * 3
    code, out, _ = run(["sample", "--help"], capsys)
    assert code == 0 and "--no-cache" in out


@pytest.mark.parametrize("extra", [["--seed", "5"], ["--greedy"], ["--top-k", "3", "--seed", "1"]])
def test_streamed_text_is_what_generate_gives(ckpt_path, capsys, extra):
    """The command prints token by token; the text is GPT.generate's, draw for draw."""
    from minitx.train.checkpoint import load_gpt

    code, out, _ = run(["sample", "--checkpoint", str(ckpt_path), "--prompt", "To be",
                        "--num-tokens", "50", *extra], capsys)
    model, tok, _ = load_gpt(ckpt_path)
    seed = int(extra[extra.index("--seed") + 1]) if "--seed" in extra else 0
    ids = model.generate(torch.tensor([tok.encode("To be")]), 50, greedy="--greedy" in extra,
                         top_k=3 if "--top-k" in extra else None,
                         generator=torch.Generator().manual_seed(seed))
    assert code == 0 and out == tok.decode(ids[0].tolist()) + "\n"


def test_sample_flushes_each_token(ckpt_path, monkeypatch):
    """Each token is written and flushed as it comes, not once at the end."""

    class Terminal(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.seen_at_flush: list[str] = []

        def flush(self) -> None:
            self.seen_at_flush.append(self.getvalue())

    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    code = cli.main(["sample", "--checkpoint", str(ckpt_path), "--prompt", "ab",
                     "--num-tokens", "12"])
    assert code == 0
    lengths = [len(text) for text in terminal.seen_at_flush]
    assert lengths == [*range(2, 15), 15]  # the prompt, one character a flush, the newline


# ---------------------------------------------------------------- export: nothing lost
def test_export_never_replaces_a_file_without_force(ckpt_path, tmp_path, capsys):
    dst = tmp_path / "copy.pt"
    dst.write_bytes(b"precious")
    argv = ["export", "--checkpoint", str(ckpt_path), "--out", str(dst)]
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, "already exists", "--force", status=2)
    assert dst.read_bytes() == b"precious"
    code, out, _ = run([*argv, "--force"], capsys)
    assert code == 0 and "exported" in out
    assert load_checkpoint(dst)["trainer"] is None  # (the fixture has no trainer)


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_export_never_replaces_the_checkpoint_it_reads(tmp_path, capsys, force, monkeypatch):
    """In place, by another spelling of the same path, or with --force: refused, and the
    run's resumable checkpoint is byte for byte what it was."""
    from minitx.train.checkpoint import export_checkpoint

    run_dir = tmp_path / "run"
    tok = CharTokenizer.from_text(VOCAB)
    cfg = GPTConfig(tok.vocab_size, block_size=BLOCK, n_layer=1, n_head=2, n_embd=16)
    src = save_checkpoint(make_checkpoint(GPT(cfg), cfg, tok), run_dir / "ckpt.pt")
    before = src.read_bytes()
    monkeypatch.chdir(tmp_path)
    for out in (str(src), "run/ckpt.pt", "run/../run/ckpt.pt"):
        code, _, err = run(["export", "--checkpoint", str(src), "--out", out, *force], capsys)
        assert_one_line_error(code, err, "is the checkpoint being exported", status=2)
    assert src.read_bytes() == before
    with pytest.raises(FileExistsError):
        export_checkpoint(src, src, overwrite=True)


# ---------------------------------------------------------------- train: checked up front
def test_out_that_is_a_file_fails_before_any_work(tmp_path, capsys, monkeypatch):
    """No corpus here: had the command loaded anything first, the error would be another."""
    monkeypatch.setenv("MINITX_DATA", str(tmp_path / "no-data"))
    regular = tmp_path / "notes.txt"
    regular.write_text("not a folder")
    code, _, err = run(["train", "--preset", "tiny", "--out", str(regular), "--no-download"],
                       capsys)
    assert_one_line_error(code, err, f"--out {regular} is a file", status=2)
    assert "Errno" not in err and regular.read_text() == "not a folder"


def test_export_target_is_checked_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINITX_DATA", str(tmp_path / "no-data"))
    taken = tmp_path / "taken.pt"
    taken.write_bytes(b"x")
    code, _, err = run(["train", "--preset", "tiny", "--out", str(tmp_path / "run"),
                        "--export", str(taken), "--no-download"], capsys)
    assert_one_line_error(code, err, "--export", "replaces no file", status=2)


def test_resume_goes_to_the_presets_length_unless_max_steps_says_otherwise(
    tmp_path, capsys, shakespeare
):
    out = str(tmp_path / "run")
    base = ["train", "--preset", "tiny", "--out", out, "--no-progress"]
    assert run([*base, "--max-steps", "3"], capsys)[0] == 0
    code, text, err = run([*base, "--resume", "--max-steps", "7"], capsys)
    assert code == 0, err
    assert "resuming at step 3; training to step 7, --max-steps" in text and "done: step 7" in text
    code, text, err = run([*base, "--resume"], capsys)
    assert code == 0, err
    assert "training to step 50, the tiny preset's length" in text and "done: step 50" in text
    assert load_checkpoint(tmp_path / "run" / "ckpt.pt")["trainer"]["step"] == 50
    code, _, err = run([*base, "--resume"], capsys)  # nothing left to do: said, non-zero
    assert_one_line_error(code, err, "already at step 50", "--max-steps", status=2)


# ---------------------------------------------------------------- the teacher's commands
@pytest.mark.parametrize("command", ["train", "sample", "export", "solutions", "progress",
                                     "guide"])
def test_every_subcommand_has_help(command, capsys):
    code, out, err = run([command, "--help"], capsys)
    assert code == 0 and err == "" and f"usage: minitx {command}" in out


def test_teacher_commands_run_through_minitx(tmp_path, capsys):
    code, out, _ = run(["solutions", "04"], capsys)
    assert code == 0 and "04.attention (implement)" in out
    code, out, _ = run(["guide"], capsys)
    assert code == 0 and out.startswith("# Teaching with minitx")
    code, out, err = run(["progress", str(tmp_path)], capsys)
    assert_one_line_error(code, err, "no saved notebooks", str(tmp_path), status=1)
    assert out == ""
    code, _, err = run(["solutions"], capsys)
    assert_one_line_error(code, err, "notebook", status=2)


def test_train_the_modern_arch_then_sample_and_resume(capsys, tmp_path, shakespeare, monkeypatch):
    """``--arch modern`` trains notebook 11's block; its default folder is runs/<preset>-modern,
    sampling works with and without the KV cache, and a resumed run keeps its block."""
    monkeypatch.chdir(tmp_path)
    argv = ["train", "--preset", "tiny", "--arch", "modern", "--max-steps", "4", "--no-progress"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "rms norm, rope positions, swiglu MLP" in out and "2 heads (1 key/value)" in out
    path = tmp_path / "runs" / "tiny-modern" / "ckpt.pt"
    saved = load_checkpoint(path)["model_config"]
    assert (saved["norm"], saved["positions"], saved["mlp"], saved["n_kv_heads"]) == (
        "rms", "rope", "swiglu", 1)
    texts = []
    for extra in ([], ["--no-cache"]):
        code, out, err = run(["sample", "--checkpoint", str(path), "--prompt", "ROMEO:",
                              "--num-tokens", "12", *extra], capsys)
        assert code == 0, err
        texts.append(out)
    assert texts[0] == texts[1] and len(texts[0]) == len("ROMEO:") + 12 + 1
    resume = ["train", "--preset", "tiny", "--out", str(path.parent), "--resume", "--no-progress"]
    code, _, err = run([*resume, "--arch", "gpt2"], capsys)
    assert_one_line_error(code, err, "--arch cannot change a resumed run", status=2)
    code, out, err = run([*resume, "--max-steps", "6"], capsys)
    assert code == 0 and "done: step 6" in out and "rope positions" in out, err


def test_train_on_bpe_tokens_then_sample_and_resume(capsys, tmp_path, shakespeare, monkeypatch):
    """``--tokens bpe`` learns a BPE vocabulary from the training text and trains on it; the
    checkpoint carries the tokenizer, so sampling (any Unicode prompt) and resuming need
    nothing else; the loss is reported in bits per character of the validation text."""
    import math

    from minitx.data.bpe import BPETokenizer
    from minitx.data.encoded import tokenizer_from_dict

    monkeypatch.chdir(tmp_path)
    argv = ["train", "--preset", "tiny", "--tokens", "bpe", "--vocab-size", "300",
            "--max-steps", "4", "--no-progress"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    path = tmp_path / "runs" / "tiny-bpe" / "ckpt.pt"
    ckpt = load_checkpoint(path)
    tokenizer = tokenizer_from_dict(ckpt["tokenizer"])
    assert isinstance(tokenizer, BPETokenizer) and tokenizer.vocab_size == 300
    assert ckpt["model_config"]["vocab_size"] == 300
    # bits per character = nats per token / (characters per token) / ln 2
    line = next(x for x in out.splitlines() if x.startswith("done:"))
    loss = float(line.split("val loss ")[1].split()[0])
    bits = float(line.split("= ")[1].split(" bits/char")[0])
    text = shakespeare.read_text(encoding="utf-8")
    val_text = text[int(0.9 * len(text)):]
    per_token = len(val_text) / len(tokenizer.encode(val_text))
    assert bits == pytest.approx(loss / per_token / math.log(2), abs=1e-3)
    assert f"(bpe, {per_token:.2f} characters a token)" in out
    code, out, err = run(["sample", "--checkpoint", str(path), "--prompt", "Ромео 🌹:",
                          "--num-tokens", "10"], capsys)
    assert code == 0 and out.startswith("Ромео 🌹:"), err
    resume = ["train", "--preset", "tiny", "--out", str(path.parent), "--resume", "--no-progress"]
    code, _, err = run([*resume, "--tokens", "char"], capsys)
    assert_one_line_error(code, err, "--tokens cannot change a resumed run", status=2)
    code, out, err = run([*resume, "--max-steps", "6"], capsys)
    assert code == 0 and "done: step 6" in out and "(bpe, " in out, err


@pytest.mark.parametrize("argv, fragment", [
    (["--vocab-size", "300"], "--vocab-size 300 sets a BPE vocabulary"),
    (["--tokens", "bpe", "--vocab-size", "100"], "256"),
    (["--tokens", "words"], "invalid choice: 'words'"),
])
def test_bad_token_settings_are_named(capsys, tmp_path, shakespeare, argv, fragment):
    code, _, err = run(["train", "--preset", "tiny", "--out", str(tmp_path / "r"),
                        "--no-progress", *argv], capsys)
    assert_one_line_error(code, err, fragment, status=2)
