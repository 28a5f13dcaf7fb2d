"""`labkit.core.watch.norms.norms`, the one way the watch takes a norm, against float64 on
tensors of every shape its rows cut differently: equal values (the worst case for a float32
sum), sizes with no divisor in range (a prime), a size past its rows' reach, half precision,
complex values and a view that is not contiguous."""

from __future__ import annotations

import pytest
import torch

from labkit.core.watch.norms import FUSED_MAX, _row_len, norms

SIZES = [1, 4096, 4097, 90_000, 262_144, 1_000_003, 4_000_000]


@pytest.mark.parametrize("n", SIZES)
def test_every_size_is_within_1e_5_of_float64(n):
    gen = torch.Generator().manual_seed(n)
    tensors = [torch.full((n,), 0.37), torch.randn(n, generator=gen)]
    for t, got in zip(tensors, norms(tensors)):
        want = t.double().norm().item()
        assert got.dtype == torch.float32 and got.dim() == 0
        assert abs(got.item() / want - 1) < 1e-5, (n, got.item(), want)


def test_rows_are_cut_within_reach_or_not_at_all():
    for n in (4097, 90_000, 1_000_003, 2 * 1_000_003, FUSED_MAX**2, FUSED_MAX**2 + 4):
        r = _row_len(n)
        if r:  # both the row and the number of rows within one fused reduction's reach
            assert n % r == 0 and r <= FUSED_MAX and n // r <= FUSED_MAX, (n, r)
    assert _row_len(1_000_003) == 0 and _row_len(FUSED_MAX**2 + 4) == 0  # a prime; too big
    assert _row_len(90_000) == 300  # the divisor nearest sqrt(n)


def test_half_complex_and_strided_tensors():
    gen = torch.Generator().manual_seed(0)
    half = torch.randn(300, 300, generator=gen).half()
    cplx = torch.randn(50_000, dtype=torch.complex64, generator=gen)
    strided = torch.randn(600, 300, generator=gen)[:, ::2]  # not contiguous
    got = norms([half, cplx, strided], dtype=torch.float32)
    want = [half.double().norm(), torch.view_as_real(cplx).double().norm(), strided.double().norm()]
    for g, w in zip(got, want):
        assert abs(g.item() / w.item() - 1) < 1e-5
