"""Data, the bottom of the package: it imports nothing else of minitx.

    corpus      the corpora: checksum-verified download, cache, train/val split
    tokenizer   the one character vocabulary (CharTokenizer), IGNORE_INDEX, a word splitter
    sequences   padding, truncation, bag of words, fixed windows (notebook 01)
    batches     random and sequential (B, T) windows of a token tensor
    text_stats  repetition and verbatim copying in generated text
    recall      the delayed-recall task of notebook 02
    dates       the date-translation task of notebooks 03 and 10
    relations   the two-relations task of notebook 06
"""

from minitx.data.batches import BlockBatches, random_blocks, sequential_blocks
from minitx.data.bpe import BPETokenizer
from minitx.data.corpus import (
    CORPORA,
    SHIPPED_MODELS,
    Corpus,
    CorpusError,
    DownloadError,
    corpus_path,
    data_dir,
    download,
    get_corpus,
    load_text,
    shipped_model_path,
    train_val_split,
    verify_file,
)
from minitx.data.tokenizer import IGNORE_INDEX, CharTokenizer, word_tokenize

__all__ = [
    "CORPORA",
    "IGNORE_INDEX",
    "SHIPPED_MODELS",
    "BPETokenizer",
    "BlockBatches",
    "CharTokenizer",
    "Corpus",
    "CorpusError",
    "DownloadError",
    "corpus_path",
    "data_dir",
    "download",
    "get_corpus",
    "load_text",
    "random_blocks",
    "sequential_blocks",
    "shipped_model_path",
    "train_val_split",
    "verify_file",
    "word_tokenize",
]
