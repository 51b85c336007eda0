"""The working set against a plain list of rows kept alongside it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from maxmargin.solvers.working_set import WorkingSet
from maxmargin.tasks.base import DualPairs


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_dual_pairs_matches_a_plain_row_list(seed):
    rng = np.random.default_rng(seed)
    ws = WorkingSet()
    rows = []  # reference: one list of (sample, label, weight) triples per live row
    for _ in range(rng.integers(1, 12)):
        if rng.random() < 0.3 and rows:  # delete some rows
            dead = np.flatnonzero(rng.random(len(rows)) < 0.4)
            ws.delete_rows(dead)
            rows = [r for k, r in enumerate(rows) if k not in set(dead.tolist())]
            continue
        n_new = int(rng.integers(1, 4))
        if rng.random() < 0.5:  # several rows, one pair each (m-slack)
            row_of_pair = np.arange(n_new)
        else:  # rows with many (or no) pairs each (1-slack planes)
            row_of_pair = np.sort(rng.integers(0, n_new, rng.integers(0, 9)))
        k = len(row_of_pair)
        pairs = DualPairs(rng.integers(0, 20, k), rng.integers(0, 3, k), rng.normal(size=k))
        ws.add_rows(pairs, row_of_pair, n_new)
        for r in range(n_new):
            sel = row_of_pair == r
            rows.append(list(zip(pairs.sample[sel], pairs.label[sel], pairs.value[sel])))
    assert ws.n_rows == len(rows)
    # every live entry with its current row index (what column coefficients are built from)
    row, sample, label, weight = ws._arrays()
    flat = [(r, s, lab, v) for r, row_ in enumerate(rows) for s, lab, v in row_]
    assert len(row) == len(flat)
    if flat:
        for got, want in zip((row, sample, label, weight), zip(*flat, strict=True), strict=True):
            np.testing.assert_array_equal(got, np.array(want))
    p_active = rng.choice([0.0, 0.5, 1.0])  # none, some or all rows active
    dual = np.where(rng.random(len(rows)) < p_active, rng.random(len(rows)) + 0.01, 0.0)
    got = ws.dual_pairs(dual)
    ref = [(s, lab, dual[r] * v) for r, row in enumerate(rows) if dual[r] > 0 for s, lab, v in row]
    assert len(got.sample) == len(ref)
    if ref:
        s, lab, v = (np.array(c) for c in zip(*ref, strict=True))
        np.testing.assert_array_equal(got.sample, s)
        np.testing.assert_array_equal(got.label, lab)
        np.testing.assert_allclose(got.value, v, rtol=0, atol=0)
