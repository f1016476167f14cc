"""minitx: the companion package of the minitx course.

Its subpackages follow the course, and each imports only those above it in this list:

    minitx.data    corpora, the character tokenizer, batches and the synthetic tasks
    minitx.nn      the from-scratch parts: RNNs, attention, masks, the transformer block,
                   GPT, the encoder-decoders and generation
    minitx.train   the Trainer (the one training loop), optimizers, presets, checkpoints,
                   device and threads
    minitx.viz     heatmaps, plots and the interactive widgets
    minitx.course  notebook set-up, exercises, the teacher's tools and the experiments
    minitx.cli     the ``minitx`` command (its ``sample`` subcommand: minitx.cli_sample)
"""

__version__ = "0.2.0"

from minitx.course.notebook import setup_notebook

__all__ = ["__version__", "setup_notebook"]
