"""Exercises of notebook 09 (the encoder-decoder transformer): the decoder's input, the
causal mask at inference, one beam-search step, the KV cache.

Expected answers are computed with :mod:`minitx.encoder_decoder` and :mod:`minitx.sampling`,
never typed in, except the predict-then-run truth of ``09.no_causal``, which notebook 09
measures (and asserts) in the cell after the exercise. Models and random inputs are made
under ``torch.random.fork_rng`` so that checking an answer does not move the learner's
random numbers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from minitx.encoder_decoder import EncoderDecoder, shift_right
from minitx.exercises import call_learner, exercise
from minitx.sampling import beam_step

CHOICES = ("lower", "same", "higher")
# Measured in notebook 09: the model trained without the causal mask, against the causal
# model (loss) and against itself under teacher forcing (accuracy).
NO_CAUSAL_TRUTH = {"loss": "lower", "accuracy": "lower"}
KV_QUESTION = {"n_layers": 2, "d_model": 16, "n_heads": 2, "steps": 22, "source_length": 18}


@exercise(
    "09.no_causal",
    "A second date transformer is trained like the first (same data, seed 0, the same "
    "learning-rate schedule) for 100 steps, but with causal=False: its decoder's "
    "self-attention may read the whole shifted target. Predict (a) its training loss after "
    "100 steps, compared with the causal model's after 100 steps, and (b) the share of test "
    "inputs it writes exactly right on its own (greedy decoding), compared with the share it "
    "gets right when fed the true previous characters (teacher forcing). Answer "
    "{'loss': ..., 'accuracy': ...}, each 'lower', 'same' or 'higher'.",
)
def _no_causal(answer: Any) -> str | None:
    if not isinstance(answer, dict) or set(answer) != {"loss", "accuracy"}:
        return "answer with a dict with the keys 'loss' and 'accuracy'"
    got = {k: str(v).strip().lower() for k, v in answer.items()}
    bad = [k for k, v in got.items() if v not in CHOICES]
    if bad:
        return f"{bad[0]}: answer one of {', '.join(CHOICES)}"
    wrong = []
    if got["loss"] != NO_CAUSAL_TRUTH["loss"]:
        wrong.append("loss: during training, what may decoder position t read without the "
                     "mask, and how does it help predict the character at t?")
    if got["accuracy"] != NO_CAUSAL_TRUTH["accuracy"]:
        wrong.append("accuracy: when it writes on its own, what is missing from the "
                     "decoder's input that was there under teacher forcing?")
    return " ".join(wrong) or None


def _shift_cases() -> list[tuple[Tensor, int]]:
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(9)
        for B, T, bos in ((1, 1, 1), (2, 1, 3), (1, 2, 1), (3, 7, 1), (4, 11, 5), (2, 22, 1)):
            cases.append((torch.randint(0, 15, (B, T)), bos))
    return cases


@exercise(
    "09.shift_right",
    "Write shift_right(tgt, bos_id): tgt is a (B, T) tensor of target ids; return the "
    "decoder's input under teacher forcing, a new (B, T) tensor: the start id, then the "
    "target one step late (its last token dropped). Answer with the function.",
)
def _shift_right(answer: Any) -> str | None:
    if not callable(answer):
        return f"answer with a function, got {type(answer).__name__}"
    for tgt, bos in _shift_cases():
        given = tgt.clone()
        got, error = call_learner(answer, given, bos)
        if error:
            return error
        shape = tuple(tgt.shape)
        if not isinstance(got, Tensor):
            return f"return a torch.Tensor, got {type(got).__name__}"
        if not torch.equal(given, tgt):
            return "your function changed tgt in place: leave the target as it is and " \
                   "build a new tensor"
        if tuple(got.shape) != shape:
            return f"for tgt of shape {shape} you return shape {tuple(got.shape)}: the " \
                   "decoder reads one token per target position"
        if got.dtype.is_floating_point or got.dtype == torch.bool:
            return f"return integer ids (int64), got {got.dtype}"
        expected = shift_right(tgt, bos)
        diff = (got != expected).nonzero()
        if len(diff):
            b, t = diff[0].tolist()
            return (f"for tgt of shape {shape} and bos_id={bos}, the first difference is at "
                    f"row {b}, column {t}: you have {int(got[b, t])}, the decoder should read "
                    f"{int(expected[b, t])}")
    return None


def _beam_cases() -> list[tuple[Tensor, Tensor, int]]:
    cases = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(19)
        for B, W, V, width, first in ((1, 1, 5, 1, False), (2, 3, 7, 3, False),
                                      (2, 3, 7, 2, False), (1, 4, 6, 4, True),
                                      (3, 2, 4, 5, False), (2, 4, 15, 4, True)):  # fmt: skip
            log_probs = torch.log_softmax(torch.randn(B, W, V, dtype=torch.float64), dim=-1)
            scores = -5 * torch.rand(B, W, dtype=torch.float64)
            if first:  # the first step: only beam 0 exists
                scores[:, 1:] = float("-inf")
            cases.append((log_probs, scores, width))
    return cases


@exercise(
    "09.beam_step",
    "Write beam_step(log_probs, beam_scores, beam_width): log_probs (B, W, V) are the "
    "next-token log-probabilities of W beams, beam_scores (B, W) their summed "
    "log-probabilities so far (-inf for beams that do not exist yet). Return (scores, parent, "
    "token), each (B, beam_width), best first: the beam_width best extensions of any beam "
    "by any token, the beam each extends, and the token it appends. Answer with the function.",
)
def _beam_step(answer: Any) -> str | None:
    if not callable(answer):
        return f"answer with a function, got {type(answer).__name__}"
    for log_probs, beam_scores, width in _beam_cases():
        got, error = call_learner(answer, log_probs.clone(), beam_scores.clone(), width)
        if error:
            return error
        if not isinstance(got, (tuple, list)) or len(got) != 3 or not all(
            isinstance(t, Tensor) for t in got
        ):
            return "return a tuple of three tensors (scores, parent, token)"
        B, W, V = log_probs.shape
        case = f"log_probs {(B, W, V)}, beam_width={width}"
        if any(tuple(t.shape) != (B, width) for t in got):
            shapes = [tuple(t.shape) for t in got]
            return f"with {case}, each of the three must be (B, beam_width) = {(B, width)}, " \
                   f"got {shapes}"
        scores, parent, token = (t.double() for t in got)
        e_scores = beam_step(log_probs, beam_scores, width)[0]
        if not torch.allclose(scores, e_scores, atol=1e-9):
            alone = torch.topk(log_probs.view(B, W * V), width, dim=-1).values
            if torch.allclose(scores, alone, atol=1e-9):
                return "a candidate's score is the whole beam's log-probability: add the " \
                       "score of the beam it extends"
            if torch.allclose(scores.sort(dim=-1, descending=True).values, e_scores, atol=1e-9):
                return f"with {case}, the right candidates, but keep them best first"
            b, k = (~torch.isclose(scores, e_scores, atol=1e-9)).nonzero()[0].tolist()
            return f"with {case}, the first wrong score is at row {b}, position {k}: " \
                   "compare every beam extended by every token, all W * V of them"
        picked = beam_scores.gather(1, parent.long().clamp(0, W - 1)) + log_probs[
            torch.arange(B)[:, None], parent.long().clamp(0, W - 1), token.long().clamp(0, V - 1)
        ]
        bad = ~torch.isclose(picked, e_scores, atol=1e-9)
        bad |= (parent < 0) | (parent >= W) | (token < 0) | (token >= V)
        if bad.any():
            b, k = bad.nonzero()[0].tolist()
            return f"with {case}, the scores are right, but parent[{b}, {k}] and " \
                   f"token[{b}, {k}] do not name the candidate that has that score"
    return None


def expected_kv_keys(
    n_layers: int = 2, d_model: int = 16, n_heads: int = 2, steps: int = 22,
    source_length: int = 18,
) -> dict[str, int]:
    """Key vectors computed by the self-attention of decoder layer 0 over ``steps`` greedy
    steps, counted with a hook on its projection: rerunning ``decode`` on the whole prefix
    each step ('without'), and ``decode_cached`` feeding one new token each step ('with')."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = EncoderDecoder(d_model, n_heads, 1, n_layers, 2 * d_model).eval()
        memory = torch.randn(1, source_length, d_model)
        tgt = torch.randn(1, steps, d_model)
    counted = {"n": 0}
    hook = model.decoder[0].self_attn.in_proj.register_forward_hook(
        lambda module, args, out: counted.__setitem__("n", counted["n"] + args[0].size(1))
    )
    result = {}
    try:
        with torch.no_grad():
            for t in range(1, steps + 1):
                model.decode(tgt[:, :t], memory)
            result["without"], counted["n"] = counted["n"], 0
            cache = None
            for t in range(steps):
                _, cache, _ = model.decode_cached(tgt[:, t : t + 1], memory, None, cache)
            result["with"] = counted["n"]
    finally:
        hook.remove()
    return result


@exercise(
    "09.kv_cache",
    f"A decoder of {KV_QUESTION['n_layers']} layers writes greedily for "
    f"{KV_QUESTION['steps']} steps (one token per step) from a source of "
    f"{KV_QUESTION['source_length']} characters. How many key vectors does the self-attention "
    "of ONE decoder layer compute over all the steps, (a) without a cache, when every step "
    "runs the decoder again on everything written so far, and (b) with the KV cache? Answer "
    "{'without': int, 'with': int}.",
)
def _kv_cache(answer: Any) -> str | None:
    if not isinstance(answer, dict) or set(answer) != {"without", "with"}:
        return "answer with a dict with the keys 'without' and 'with'"
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in answer.values()):
        return "answer with ints"
    expected = expected_kv_keys(**KV_QUESTION)
    steps, S = KV_QUESTION["steps"], KV_QUESTION["source_length"]
    wrong = []
    if answer["without"] != expected["without"]:
        if answer["without"] in (steps * steps, steps * S):
            wrong.append("without: at step t the prefix holds t tokens, not all of them")
        else:
            wrong.append("without: step t computes a key for each of the t tokens written "
                         "so far; add them up")
    if answer["with"] != expected["with"]:
        if answer["with"] == S:
            wrong.append("with: the self-attention's keys come from the target, not the source")
        else:
            wrong.append("with: the cache keeps every earlier key; how many are new per step?")
    return " ".join(wrong) or None
