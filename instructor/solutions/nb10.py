"""The instructor's answers to notebook 10's exercises."""

from __future__ import annotations

import torch
from torch import Tensor

from minitx.course.exercises.nb10 import SOURCE_CHANGE, SOURCE_EXAMPLE
from minitx.data import dates
from minitx.nn import encoder_decoder
from minitx.nn.encoder_decoder import DateTransformer, EncoderDecoder


def shift_right(tgt: Tensor, bos_id: int) -> Tensor:
    """The decoder's input: bos_id, then the target one step late (last token dropped)."""
    bos = torch.full_like(tgt[:, :1], bos_id)  # (B, 1)
    return torch.cat([bos, tgt[:, :-1]], dim=1)  # (B, T)


def beam_step(
    log_probs: Tensor, beam_scores: Tensor, beam_width: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Extend every beam by every token; keep the beam_width best, best first."""
    B, W, V = log_probs.shape
    total = (beam_scores[:, :, None] + log_probs).reshape(B, W * V)  # each candidate's score
    scores, flat = total.topk(beam_width, dim=-1)  # (B, beam_width), sorted
    return scores, flat // V, flat % V  # candidate w * V + v extends beam w by token v


def key_vectors(steps: int, source_length: int) -> dict[str, int]:
    """Keys computed by one decoder layer's self-attention over ``steps`` greedy steps."""
    without = sum(range(1, steps + 1))  # step t runs the decoder on all t tokens so far
    return {"without": without, "with": steps}  # with the cache: the newest token only


def source_change_truth() -> str:
    """The letter of 10.source_change that an untrained DateTransformer shows: which
    decoder positions' logits move when source character 8 changes."""
    j, char = SOURCE_CHANGE
    changed = SOURCE_EXAMPLE[:j] + char + SOURCE_EXAMPLE[j + 1 :]
    target = "1998-03-14"
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        model = DateTransformer().double().eval()
        src, lengths = dates.SOURCE_VOCAB.encode_batch([SOURCE_EXAMPLE, changed])
        tgt_out = torch.tensor([[*dates.TARGET_VOCAB.encode(target), dates.EOS_ID]] * 2)
        tgt_in = encoder_decoder.shift_right(tgt_out, dates.BOS_ID)
        logits, _ = model(src, lengths, tgt_in)  # (2, 11, V)
    moved = [not torch.allclose(logits[0, t], logits[1, t], rtol=0, atol=1e-12)
             for t in range(logits.size(1))]  # fmt: skip
    if not any(moved):
        return "a"
    if all(moved):
        return "c"
    return "b" if moved == sorted(moved) else "d"


def counted_kv_keys(steps: int, source_length: int, n_layers: int = 2) -> dict[str, int]:
    """Key vectors computed by the self-attention of decoder layer 0 over ``steps`` greedy
    steps, counted with a hook on its projection: rerunning ``decode`` on the whole prefix
    each step ('without'), and ``decode_cached`` feeding one new token each step ('with')."""
    d_model = 16
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = EncoderDecoder(d_model, 2, 1, n_layers, 2 * d_model).eval()
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


SOLUTIONS = {
    "10.shift_right": lambda: shift_right,
    "10.beam_step": lambda: beam_step,
    "10.source_change": source_change_truth,
    "10.kv_cache": lambda: key_vectors,
}

MODEL_ANSWERS = {
    "10.fair_budget": (
        "Each budget answers a different question. Equal steps asks which model learns more "
        "from the same examples. Equal seconds depends on the hardware: on a CPU with small "
        "batches the GRU's sequential loop is cheap, while on a GPU the transformer processes "
        "all positions at once and gets many more steps per second, so it would be favoured "
        "there. Equal FLOPs ignores how well the work parallelises. A proper comparison fixes "
        "the budget in advance, measures time per step (or FLOPs) on the target hardware, "
        "trains every model over several seeds until its validation accuracy stops improving "
        "or the budget is spent, and reports accuracy with its spread against that budget."
    ),
}
