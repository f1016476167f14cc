"""RNN, LSTM and GRU, written from their equations.

A cell does one time step; a layer (``RNN``, ``LSTM``, ``GRU``) runs its cell over the
sequence, left to right, reusing the same weights at every step. Parameters are laid out
as in PyTorch (``weight_ih`` (gates*H, C), ``weight_hh`` (gates*H, H), ``bias_ih``,
``bias_hh``; gate order LSTM i,f,g,o and GRU r,z,n), so ``from_torch`` is a plain copy.
Inputs are batch-first (B, T, C); states are (1, B, H) like PyTorch's single layer.

``RecallClassifier`` is the many-to-one model of notebook 02 that learns the delayed-recall
task of :mod:`minitx.data.recall`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minitx.nn.weights import copy_weights

__all__ = [
    "GRU",
    "LAYERS",
    "LSTM",
    "RNN",
    "GRUCell",
    "LSTMCell",
    "RNNCell",
    "RecallClassifier",
    "init_forget_bias",
]

State = Tensor | tuple[Tensor, Tensor]


class _Cell(nn.Module):
    """Holds the four parameters of a cell with ``n_gates`` gates of size ``hidden_size``."""

    n_gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        G = self.n_gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(G, input_size))
        self.weight_hh = nn.Parameter(torch.empty(G, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(G)) if bias else None
        self.bias_hh = nn.Parameter(torch.empty(G)) if bias else None
        bound = 1.0 / math.sqrt(hidden_size)  # PyTorch's init: U(-1/sqrt(H), 1/sqrt(H))
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def _check(self, x: Tensor, h: Tensor | None) -> Tensor:
        if x.dim() != 2 or x.size(1) != self.input_size:
            raise ValueError(f"expected input (B, {self.input_size}), got {tuple(x.shape)}")
        if h is None:
            return x.new_zeros(x.size(0), self.hidden_size)
        if h.shape != (x.size(0), self.hidden_size):
            raise ValueError(
                f"expected state ({x.size(0)}, {self.hidden_size}), got {tuple(h.shape)}"
            )
        return h


class RNNCell(_Cell):
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh). x (B, C), h (B, H) -> h' (B, H)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"
    ) -> None:
        super().__init__(input_size, hidden_size, bias)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        h = self._check(x, h)
        a = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        return torch.tanh(a) if self.nonlinearity == "tanh" else torch.relu(a)


class LSTMCell(_Cell):
    """One LSTM step. x (B, C), state (h, c) each (B, H) -> (h', c').

        i, f, o = sigmoid(...), g = tanh(...)   (input, forget, output gates; candidate)
        c' = f * c + i * g                      (the additive cell-state highway)
        h' = o * tanh(c')
    """

    n_gates = 4

    def gates(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The gates (i, f, g, o), each (B, H), for input x (B, C) and hidden state h (B, H)."""
        a = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = a.chunk(4, dim=1)  # each (B, H)
        return torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)

    def forward(
        self, x: Tensor, state: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        h, c = (None, None) if state is None else state
        h, c = self._check(x, h), self._check(x, c)
        i, f, g, o = self.gates(x, h)
        c = f * c + i * g
        return o * torch.tanh(c), c


class GRUCell(_Cell):
    """One GRU step. x (B, C), h (B, H) -> h' (B, H).

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)          (reset gate)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)          (update gate)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))       (candidate)
        h' = (1 - z) * n + z * h
    """

    n_gates = 3

    def gates(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The reset gate r, update gate z and candidate n, each (B, H)."""
        xr, xz, xn = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=1)
        hr, hz, hn = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        return r, z, torch.tanh(xn + r * hn)

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        h = self._check(x, h)
        _, z, n = self.gates(x, h)
        return (1 - z) * n + z * h


class _Layer(nn.Module):
    """Runs ``self.cell`` over (B, T, C) inputs one step at a time."""

    torch_type: type[nn.RNNBase]

    def forward(self, x: Tensor, state: State | None = None) -> tuple[Tensor, State]:
        state = self._initial_state(x, state)  # checks x (B, T, C) and the state
        outputs = []
        for t in range(x.size(1)):  # the sequential bottleneck: step t needs step t-1
            state = self.cell(x[:, t], state)
            outputs.append(state[0] if isinstance(state, tuple) else state)
        y = torch.stack(outputs, dim=1)  # (B, T, H)
        return y, self._pack(state)

    def _initial_state(self, x: Tensor, state: State | None) -> State | None:
        C = self.cell.input_size
        if x.dim() != 3 or x.size(2) != C or x.size(1) == 0:
            raise ValueError(f"expected input (B, T, {C}) with T >= 1, got {tuple(x.shape)}")
        if state is None:
            return None
        B = x.size(0)
        H, lstm = self.cell.hidden_size, isinstance(self, LSTM)
        if lstm != isinstance(state, tuple) or (lstm and len(state) != 2):
            want = "a tuple (h0, c0)" if lstm else "a tensor h0"
            raise ValueError(f"expected initial state as {want}, got {type(state).__name__}")
        for s in state if lstm else (state,):
            if not isinstance(s, Tensor) or s.shape != (1, B, H):
                got = tuple(s.shape) if isinstance(s, Tensor) else type(s).__name__
                raise ValueError(f"expected initial state (1, {B}, {H}), got {got}")
        return (state[0][0], state[1][0]) if lstm else state[0]

    @staticmethod
    def _pack(state: State) -> State:
        if isinstance(state, tuple):
            return tuple(s.unsqueeze(0) for s in state)  # ((1, B, H), (1, B, H))
        return state.unsqueeze(0)  # (1, B, H)

    @classmethod
    def from_torch(cls, module: nn.RNNBase) -> _Layer:
        """Copy the weights of a single-layer, unidirectional, batch-first torch module."""
        want = cls.torch_type.__name__
        if type(module) is not cls.torch_type:
            raise TypeError(f"expected nn.{want}, got {type(module).__name__}")
        if module.num_layers != 1 or module.bidirectional or not module.batch_first:
            raise ValueError(
                f"expected nn.{want}(num_layers=1, bidirectional=False, batch_first=True), got "
                f"num_layers={module.num_layers}, bidirectional={module.bidirectional}, "
                f"batch_first={module.batch_first}"
            )
        if getattr(module, "proj_size", 0):
            raise ValueError(f"expected nn.LSTM with proj_size=0, got {module.proj_size}")
        kwargs = {"nonlinearity": module.nonlinearity} if cls is RNN else {}
        ours = cls(module.input_size, module.hidden_size, bias=module.bias, **kwargs)
        names = {f"cell.{name}": f"{name}_l0" for name, _ in ours.cell.named_parameters()}
        return copy_weights(ours, module, names)


class RNN(_Layer):
    """Elman RNN over a batch-first sequence.

    ``forward(x (B, T, C), h0 (1, B, H) or None) -> (output (B, T, H), h_n (1, B, H))``,
    exactly like ``nn.RNN(C, H, batch_first=True)``.
    """

    torch_type = nn.RNN

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh"
    ) -> None:
        super().__init__()
        self.cell = RNNCell(input_size, hidden_size, bias, nonlinearity)


class LSTM(_Layer):
    """LSTM over a batch-first sequence.

    ``forward(x (B, T, C), (h0, c0) each (1, B, H) or None)
    -> (output (B, T, H), (h_n, c_n) each (1, B, H))``, like ``nn.LSTM(batch_first=True)``.
    """

    torch_type = nn.LSTM

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.cell = LSTMCell(input_size, hidden_size, bias)


class GRU(_Layer):
    """GRU over a batch-first sequence.

    ``forward(x (B, T, C), h0 (1, B, H) or None) -> (output (B, T, H), h_n (1, B, H))``,
    like ``nn.GRU(batch_first=True)``.
    """

    torch_type = nn.GRU

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.cell = GRUCell(input_size, hidden_size, bias)


def init_forget_bias(lstm: LSTM | LSTMCell, value: float) -> None:
    """Start an LSTM's forget gate at f = sigmoid(``value``) (for zero input and state).

    Writes ``value`` into the forget rows of ``bias_ih`` and 0 into those of ``bias_hh``.
    PyTorch starts near sigmoid(0) = 0.5; a positive value opens the cell-state highway.
    """
    cell = lstm.cell if isinstance(lstm, LSTM) else lstm
    if not isinstance(cell, LSTMCell) or cell.bias_ih is None:
        raise TypeError(f"expected an LSTM or LSTMCell with biases, got {type(lstm).__name__}")
    H = cell.hidden_size
    with torch.no_grad():
        cell.bias_ih[H : 2 * H] = value  # gate order i, f, g, o: rows H..2H are f
        cell.bias_hh[H : 2 * H] = 0.0


LAYERS = {"rnn": RNN, "lstm": LSTM, "gru": GRU}


class RecallClassifier(nn.Module):
    """Many-to-one: tokens (B, T) -> one-hot (B, T, V) -> RNN/LSTM/GRU -> logits (B, K)
    read from the last hidden state. An LSTM's forget-gate bias starts at ``forget_bias``."""

    def __init__(
        self, kind: str, vocab: int, hidden_size: int, n_classes: int, forget_bias: float = 2.0
    ) -> None:
        super().__init__()
        if kind not in LAYERS:
            raise ValueError(f"kind must be one of {sorted(LAYERS)}, got {kind!r}")
        self.vocab = vocab
        self.rnn = LAYERS[kind](vocab, hidden_size)
        self.head = nn.Linear(hidden_size, n_classes)
        if kind == "lstm":
            init_forget_bias(self.rnn, forget_bias)  # start with the highway (mostly) open

    def forward(self, tokens: Tensor) -> Tensor:
        x = F.one_hot(tokens, self.vocab).to(self.head.weight.dtype)  # (B, T, V)
        out, _ = self.rnn(x)  # (B, T, H)
        return self.head(out[:, -1])  # (B, K)
