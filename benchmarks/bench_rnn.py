"""Time per sequence against length: minitx RNN/LSTM/GRU against torch's nn.RNN/LSTM/GRU.

    .venv/bin/python benchmarks/bench_rnn.py [--batch 8] [--lengths 25 50 100 200 400]

Forward passes without gradients. Each minitx layer holds its torch twin's weights
(``from_torch``), and the two run interleaved so load from other processes hits both
alike. Times are CPU time of this process (``time.process_time``, one thread by default),
so other programs sharing the CPU do not count. Prints the fastest of ``--repeats``
timings per sequence, the growth from the
shortest to the longest length (linear in T = the ratio of the lengths), and the ratio
minitx / torch.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from minitx.nn.rnn import GRU, LSTM, RNN


def best_time(fn, x: torch.Tensor, repeats: int) -> float:
    """Fastest of ``repeats`` calls of ``fn(x)``, in seconds of process CPU time."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn(x)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--input", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[25, 50, 100, 200, 400])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    print(f"batch {args.batch}, input {args.input}, hidden {args.hidden}, "
          f"threads {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"{'layer':12s}" + "".join(f"{T:>10d}" for T in args.lengths)
          + f"{'growth':>9s}  (ms per sequence)")
    with torch.no_grad():
        for ours_cls, torch_cls in [(RNN, nn.RNN), (LSTM, nn.LSTM), (GRU, nn.GRU)]:
            ref = torch_cls(args.input, args.hidden, batch_first=True)
            ours = ours_cls.from_torch(ref)
            rows = {f"minitx {ours_cls.__name__}": [], f"nn.{torch_cls.__name__}": []}
            for T in args.lengths:
                x = torch.randn(args.batch, T, args.input)
                torch.testing.assert_close(ours(x)[0], ref(x)[0], rtol=1e-4, atol=1e-5)
                for name, module in zip(rows, (ours, ref), strict=True):
                    rows[name].append(best_time(module, x, args.repeats) / args.batch)
            for name, ts in rows.items():
                print(f"{name:12s}" + "".join(f"{1e3 * t:10.3f}" for t in ts)
                      + f"{ts[-1] / ts[0]:8.1f}x")
            ratio = [a / b for a, b in zip(*rows.values(), strict=True)]
            print(f"{'  ratio':12s}" + "".join(f"{r:10.1f}" for r in ratio))
    longest, shortest = args.lengths[-1], args.lengths[0]
    print(f"linear growth would be {longest / shortest:.1f}x from T={shortest} to T={longest}")


if __name__ == "__main__":
    main()
