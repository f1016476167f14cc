"""minitx: the companion package of the minitx course.

Each module holds one idea of the course and is imported by the notebook that teaches it:

    minitx.data         corpora: registry, checksum-verified download, cache
    minitx.tokenizer    character tokenizer
    minitx.sequences    padding, truncation, bag of words, fixed windows (notebook 01)
    minitx.rnn          RNN, LSTM and GRU written from their equations
    minitx.masks        causal and padding masks (True = may attend)
    minitx.attention    scaled dot-product, additive and multi-head attention
    minitx.transformer  positions, LayerNorm, feed-forward, transformer blocks
    minitx.gpt          a small GPT
    minitx.trainer      a training loop that knows nothing about GPT
    minitx.viz          attention heatmaps and the plots the course repeats
    minitx.explorer     interactive attention explorer (ipywidgets)
    minitx.exercises    auto-checked exercises
"""

from minitx.notebook import setup_notebook

__version__ = "0.1.0"

__all__ = ["__version__", "setup_notebook"]
