"""The hand-computed examples of COURSE.md sections 04 and 05, computed with the package
and checked to the decimals the course gives."""

from __future__ import annotations

import math

import torch

from minitx.nn.attention import masked_softmax, scaled_dot_product_attention
from minitx.nn.masks import additive_mask, causal_mask

DT = torch.float64


def t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=DT)


def assert_decimals(actual: torch.Tensor, expected, decimals: int) -> None:
    """``actual`` rounded to ``decimals`` equals ``expected`` (the course's numbers)."""
    rounded = torch.round(actual, decimals=decimals)
    torch.testing.assert_close(rounded, t(expected), rtol=0, atol=1e-9)


def self_attention(X, W_Q, W_K, W_V, mask=None):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return scaled_dot_product_attention(Q, K, V, mask)


# "Be Brief": two tokens.
BE_BRIEF = dict(X=t([[1, 1], [1, 0]]), W_Q=torch.eye(2, dtype=DT), W_K=torch.eye(2, dtype=DT),
                W_V=t([[0, 1], [1, 0]]))
# Three tokens.
THREE = dict(X=t([[1, 0], [0, 1], [1, 1]]), W_Q=t([[1, 1], [0, 1]]), W_K=t([[1, 0], [1, 1]]),
             W_V=t([[0.5, 1], [1, 0]]))


def test_example_1_be_brief():
    Z, A = self_attention(**BE_BRIEF)
    assert_decimals(A, [[0.67, 0.33], [0.50, 0.50]], 2)
    assert_decimals(Z, [[0.67, 1.00], [0.50, 1.00]], 2)


def test_example_2_not_guilty_plea():
    # A query and three keys whose scaled scores are [0, 1, 2]: with d_k = 4 the raw dot
    # products are [0, 2, 4] and sqrt(4) = 2 divides them down.
    q = t([[1, 1, 1, 1]])
    K = t([[0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [1, 1, 1, 1]])
    V = t([[1, 0], [0, 1], [1, 1]])
    scaled = q @ K.T / math.sqrt(4)
    torch.testing.assert_close(scaled, t([[0, 1, 2]]))
    Z, A = scaled_dot_product_attention(q, K, V)
    assert_decimals(A, [[0.09, 0.24, 0.67]], 2)
    assert_decimals(Z, [[0.76, 0.91]], 2)
    assert A.argmax().item() == 2  # "plea" dominates


def test_example_3_three_tokens():
    Z, A = self_attention(**THREE)
    assert_decimals(A, [[0.140, 0.284, 0.576], [0.198, 0.401, 0.401],
                        [0.074, 0.306, 0.620]], 3)
    assert_decimals(Z, [[1.218, 0.716], [1.102, 0.599], [1.273, 0.694]], 3)


def test_example_4_one_query_two_keys():
    q = t([[1, 1]])
    K = t([[1, 0], [0, 2]])
    _, A = scaled_dot_product_attention(q, K, K)
    assert_decimals(A, [[0.330, 0.670]], 3)


def test_section_05_be_brief_causal():
    Z, A = self_attention(**BE_BRIEF, mask=causal_mask(2))
    assert A[0].tolist() == [1.0, 0.0]
    assert Z[0].tolist() == [1.0, 1.0]
    # the second token sees both, as without the mask
    torch.testing.assert_close(A[1], self_attention(**BE_BRIEF)[1][1])


def test_section_05_three_tokens_causal():
    _, A = self_attention(**THREE, mask=causal_mask(3))
    assert A[0].tolist() == [1.0, 0.0, 0.0]
    assert (A.triu(1) == 0).all()  # nothing above the diagonal
    torch.testing.assert_close(A.sum(-1), torch.ones(3, dtype=DT))


def test_section_05_additive_mask_row_of_position_3():
    add = additive_mask(causal_mask(4))
    assert add[2].tolist() == [0.0, 0.0, 0.0, float("-inf")]
    # adding it to scores before the softmax is the same as the boolean mask
    s = torch.randn(4, 4, dtype=DT)
    torch.testing.assert_close(torch.softmax(s + add.to(DT), -1), masked_softmax(s, causal_mask(4)))
