"""Write docs/API.md: the public names of every minitx module, one line each, grouped by
the notebook that teaches them (first docstring line as the description).

Run ``python docs/make_api.py`` after adding, renaming or removing a public name."""

import importlib
import inspect
import reprlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GROUPS = [
    (
        "Setup, runtime and data (notebooks 00, 01)",
        [
            "minitx.course.notebook",
            "minitx.train.runtime",
            "minitx.data.corpus",
            "minitx.data.tokenizer",
            "minitx.data.sequences",
        ],
    ),
    (
        "Recurrent networks (02)",
        ["minitx.nn.rnn", "minitx.course.gradients", "minitx.data.recall",
         "minitx.course.recall_experiment"],
    ),
    (
        "Attention in an encoder-decoder (03)",
        ["minitx.nn.attention", "minitx.nn.seq2seq", "minitx.data.dates",
         "minitx.course.date_translation"],
    ),
    (
        "Self-attention, explored (04)",
        ["minitx.nn.word_attention", "minitx.viz.attention_explorer", "minitx.viz.explorer"],
    ),
    ("Masks (05)", ["minitx.nn.masks", "minitx.course.leak"]),
    (
        "Multi-head attention (06)",
        ["minitx.data.relations", "minitx.course.relations", "minitx.train.parallel"],
    ),
    (
        "The transformer block and its cost (07)",
        [
            "minitx.nn.positions",
            "minitx.nn.activations",
            "minitx.nn.transformer",
            "minitx.nn.weights",
            "minitx.course.cost",
        ],
    ),
    (
        "Mini-GPT (08)",
        [
            "minitx.nn.gpt",
            "minitx.nn.gpt_config",
            "minitx.course.ladder",
            "minitx.data.batches",
            "minitx.train.trainer",
            "minitx.train.shards",
            "minitx.train.cpu_policy",
            "minitx.train.config",
            "minitx.train.optim",
            "minitx.train.muon",
            "minitx.train.presets",
            "minitx.nn.generation",
            "minitx.nn.modes",
            "minitx.train.evaluate",
            "minitx.data.text_stats",
            "minitx.train.checkpoint",
            "minitx.course.analysis",
            "minitx.viz.sampling_explorer",
            "minitx.cli",
            "minitx.cli_sample",
        ],
    ),
    ("The encoder-decoder transformer (10)", ["minitx.nn.encoder_decoder"]),
    (
        "The modern block (11)",
        ["minitx.nn.rmsnorm", "minitx.nn.rope", "minitx.nn.swiglu", "minitx.nn.grouped_attention",
         "minitx.course.modern_block"],
    ),
    ("Tokenization (12)", ["minitx.data.bpe", "minitx.data.encoded",
                           "minitx.course.tokenization"]),
    ("Pictures (every notebook)", ["minitx.viz.plots", "minitx.viz.heatmap", "minitx.viz.arrays",
                                  "minitx.viz.alt_text"]),
    (
        "Exercises and the teacher's tools",
        ["minitx.course.exercises", "minitx.course.exercises.checks",
         "minitx.course.exercises.answers", "minitx.course.exercises.guard",
         "minitx.course.exercises.plain", "minitx.course.exercises.seal",
         "minitx.course.exercises.grading", "minitx.course.exercises.review",
         "minitx.course.teacher", "minitx.course.editions", "minitx.course.nbgrader_export",
         "minitx.course.handout", "minitx.course.lab_length",
         "minitx.course.site"],
    ),
]
sys.path.insert(0, str(ROOT / "tests"))
from test_api_doc import public_names  # noqa: E402  (the same rule the test applies)

out = [
    "# The minitx API",
    "",
    "Every public name of the package, one line each, grouped by the notebook that teaches it.",
    "A test (`tests/test_api_doc.py`) checks that this page and the package list the same names.",
    "",
]


def shown(obj: object) -> str:
    """A constant as the page shows it: functions by name (a repr has a memory address)."""
    if callable(obj):
        return getattr(obj, "__name__", type(obj).__name__)
    if isinstance(obj, dict):
        text = "{" + ", ".join(f"{k!r}: {shown(v)}" for k, v in obj.items()) + "}"
        return text if len(text) <= 120 else text[:117] + "..."
    return reprlib.repr(obj)


for title, mods in GROUPS:
    out += [f"## {title}", ""]
    for m in mods:
        mod = importlib.import_module(m)
        para = " ".join((inspect.getdoc(mod) or "").split("\n\n")[0].split())
        first = para.split(". ")[0].rstrip(".") + "."
        out += [f"### `{m}`", "", first, ""]
        for name in public_names(mod):
            obj = getattr(mod, name)
            doc = inspect.getdoc(obj) if (inspect.isfunction(obj) or inspect.isclass(obj)) else None
            para = " ".join((doc or "").split("\n\n")[0].split())
            line = para.split(". ")[0].rstrip(".") + "." if para else ""
            if not line and not callable(obj):
                line = f"constant, `{shown(obj)}`"
            out.append(f"- `{name}`: {line}".rstrip(": ").rstrip())
        out.append("")
(ROOT / "docs" / "API.md").write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
print("written")
