"""The separate scale filter (maxmargin.apps.tracking.scale, after Danelljan et al.,
BMVC 2014): its closed form against a direct least-squares solve in the signal domain,
its running-average update against the exactly weighted least-squares filter (one
channel, where the running average is exact), and the estimate on synthetic videos whose
target grows or shrinks by a known factor."""

import numpy as np
import pytest
from sklearn.base import clone

from maxmargin.apps.tracking import (
    ScaleFilter,
    ScaleModel,
    StructBoostTracker,
    make_tracker,
    track_sequence,
)
from maxmargin.apps.tracking.scale import scale_filter_terms, scale_response


def correlation_matrix(f):
    """M (S, d S) with (M h)[n] = sum_l sum_m h^l[m] f^l[(m + n) mod S]: the circular
    cross-correlation written out, for h stacked channel after channel."""
    d, S = f.shape
    M = np.zeros((S, d * S))
    for n in range(S):
        for l in range(d):
            for m in range(S):
                M[n, l * S + m] = f[l, (m + n) % S]
    return M


def brute_filter(samples, weights, g, lam):
    """argmin_h sum_t w_t ||M_t h - g||^2 + lam ||h||^2 by a stacked least-squares solve."""
    d, S = samples[0].shape
    rows = [np.sqrt(w) * correlation_matrix(f) for f, w in zip(samples, weights, strict=True)]
    rhs = [np.sqrt(w) * g for w in weights]
    rows.append(np.sqrt(lam) * np.eye(d * S))
    rhs.append(np.zeros(d * S))
    h, *_ = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)
    return h


def gaussian(S, sigma=1.5):
    c = (S - 1) // 2
    return np.exp(-0.5 * ((np.arange(S) - c) / sigma) ** 2)


def test_closed_form_matches_least_squares_on_one_sample():
    """Several channels, one sample: H^l = conj(G) F^l / (sum_k |F^k|^2 + lam) is the
    exact minimiser (Sherman-Morrison); filter and response equal the direct solve's."""
    rng = np.random.default_rng(0)
    d, S, lam = 3, 9, 0.05
    f, z = rng.normal(size=(d, S)), rng.normal(size=(d, S))
    g = gaussian(S)
    A, B = scale_filter_terms(np.fft.fft(f, axis=1), np.fft.fft(g))
    h = brute_filter([f], [1.0], g, lam)
    # the closed form's filter in the signal domain (real up to round-off)
    H = A / (B + lam)[None, :]
    h_closed = np.fft.ifft(H, axis=1)
    assert np.max(np.abs(h_closed.imag)) < 1e-12
    np.testing.assert_allclose(h_closed.real.ravel(), h, rtol=1e-9, atol=1e-12)
    r = scale_response(A, B, np.fft.fft(z, axis=1), lam)
    np.testing.assert_allclose(r, correlation_matrix(z) @ h, rtol=1e-9, atol=1e-12)
    # and the filter reproduces nearly the desired output on its own sample
    assert int(np.argmax(scale_response(A, B, np.fft.fft(f, axis=1), lam))) == (S - 1) // 2


def _model_fed(monkeypatch, samples, **cfg):
    """A ScaleModel whose samples are the given arrays (the patch pipeline bypassed), so
    the model's own start / update code runs on them."""
    it = iter(samples)

    def fed(self, grey, c, s):
        return np.fft.fft(next(it), axis=1)

    monkeypatch.setattr(ScaleModel, "_sample", fed)
    grey = np.zeros((40, 40), dtype=np.float32)
    m = ScaleFilter(**cfg).start(grey, np.array([10.0, 10.0, 10.0, 10.0]))
    return m, grey


def test_running_average_update_is_the_weighted_least_squares_filter(monkeypatch):
    """One channel: after T samples the running-average filter is exactly the least-squares
    filter with weights (1 - eta)^(T-1) for the first sample and eta (1 - eta)^(T-t) for
    sample t (they sum to 1); responses equal the direct solve's."""
    rng = np.random.default_rng(1)
    S, T, eta, lam = 9, 6, 0.3, 0.02
    samples = [rng.normal(size=(1, S)) for _ in range(T)]
    m, grey = _model_fed(monkeypatch, samples, n_scales=S, learning_rate=eta, lam=lam, sigma=1.5)
    for _ in range(T - 1):
        m.update(grey, np.array([15.0, 15.0]))
    w = [(1 - eta) ** (T - 1)] + [eta * (1 - eta) ** (T - t) for t in range(2, T + 1)]
    assert np.isclose(sum(w), 1.0)
    h = brute_filter(samples, w, gaussian(S, 1.5), lam)
    z = rng.normal(size=(1, S))
    r = scale_response(m.A_, m.B_, np.fft.fft(z, axis=1), lam)
    np.testing.assert_allclose(r, correlation_matrix(z) @ h, rtol=1e-9, atol=1e-12)


def test_running_average_keeps_exact_weighted_sums_on_many_channels(monkeypatch):
    """Several channels: numerator and denominator are the weighted sums of the samples'
    own terms (the approximation of Danelljan et al. is in using them, not in the sums)."""
    rng = np.random.default_rng(2)
    S, T, eta = 7, 5, 0.1
    samples = [rng.normal(size=(4, S)) for _ in range(T)]
    m, grey = _model_fed(monkeypatch, samples, n_scales=S, learning_rate=eta)
    for _ in range(T - 1):
        m.update(grey, np.array([15.0, 15.0]))
    w = [(1 - eta) ** (T - 1)] + [eta * (1 - eta) ** (T - t) for t in range(2, T + 1)]
    G = np.fft.fft(gaussian(S, np.sqrt(S) / 4.0))
    terms = [scale_filter_terms(np.fft.fft(f, axis=1), G) for f in samples]
    np.testing.assert_allclose(m.A_, sum(wt * a for wt, (a, _) in zip(w, terms, strict=True)))
    np.testing.assert_allclose(m.B_, sum(wt * b for wt, (_, b) in zip(w, terms, strict=True)))


def growing_video(n=40, size=(120, 160), w0=30.0, h0=24.0, factor=1.5, seed=0):
    """A textured rectangle on blocky clutter whose size goes from (w0, h0) to factor times
    that, geometrically, over n frames, moving sideways; its texture morphs from one
    random pattern to another."""
    rng = np.random.default_rng(seed)
    H, W = size
    bg = 0.4 + 0.2 * np.kron(rng.random((H // 6 + 1, W // 6 + 1)), np.ones((6, 6)))[:H, :W]
    tex_a, tex_b = rng.random((16, 16)), rng.random((16, 16))
    ys, xs = np.mgrid[0:H, 0:W]
    frames, boxes = [], []
    for k in range(n):
        f = factor ** (k / (n - 1))
        w, h = w0 * f, h0 * f
        cx, cy = W / 2 + 5 * np.sin(k / 5), H / 2
        t = k / (n - 1)
        tex = (1 - t) * tex_a + t * tex_b
        img = bg.copy()
        u, v = (xs + 0.5 - (cx - w / 2)) / w, (ys + 0.5 - (cy - h / 2)) / h
        inside = (u >= 0) & (u < 1) & (v >= 0) & (v < 1)
        iu, iv = np.clip((u * 16).astype(int), 0, 15), np.clip((v * 16).astype(int), 0, 15)
        img[inside] = 0.1 + 0.8 * tex[iv[inside], iu[inside]]
        frames.append(img.astype(np.float32))
        boxes.append([cx - w / 2, cy - h / 2, w, h])
    return frames, np.array(boxes)


@pytest.mark.parametrize("factor", [1.5, 1 / 1.5])
def test_estimate_follows_a_target_of_known_growth(factor):
    """Fed the true centres, the estimated size follows a target growing (shrinking) 1 %
    a frame, 20 steps in all, to within three scale steps on every frame and two at the
    end (the grid of sizes is 2 %, so one step is quantisation; the filter's memory lags
    the truth by up to about two more, as measured).  Fails when the argmax is reversed
    or the update replaces the model each frame (then the size stays within the first
    few steps)."""
    frames, boxes = growing_video(factor=factor)
    cfg = ScaleFilter()
    m = cfg.start(frames[0], boxes[0])
    est = [1.0]
    for k in range(1, len(frames)):
        c = boxes[k, :2] + boxes[k, 2:] / 2
        est.append(m.estimate(frames[k], c))
        m.update(frames[k], c)
    err = np.abs(np.log(np.array(est)) - np.log(boxes[:, 2] / boxes[0, 2]))
    step = np.log(cfg.step)
    assert err.max() <= 3 * step, np.round(err / step, 2)
    assert err[-1] <= 2 * step


def test_tracker_with_the_scale_filter_follows_the_size():
    """StructBoostTracker(scale_filter=ScaleFilter()) on the growing target: its box grows
    (at least 1.25 of the 1.5 times) and overlaps the truth by more than 0.8 on average,
    while the default keeps the first width and falls to 0.44 by the end (mean 0.7)."""
    from maxmargin.apps.tracking import overlaps

    frames, boxes = growing_video()
    out = {}
    # one first model (consensus=1), the path this test was written for: the online loop
    # is chaotic, and with the default's consensus the filter's final size on this one
    # run moves with the jitter (1.49 / 1.24 / 1.40 of the first at 0 / 1 / 2 px;
    # 1.27 with consensus=1) while the overlap stays 0.88-0.92 -- a property of the
    # single run, not of the filter, which test_estimate_follows_a_target_of_known_growth
    # checks on the true centres
    one = StructBoostTracker().sampling.replace(consensus=1)
    for name, sf in (("fixed", None), ("filter", ScaleFilter())):
        tr = StructBoostTracker(scale_filter=sf, random_state=0, sampling=one)
        pred, _ = track_sequence(tr, frames, first_box=boxes[0])
        out[name] = pred
        if sf is not None:
            assert tr.n_rescaled_ > 0 and tr.size_scale_ > 1.25
    assert np.all(out["fixed"][:, 2] == out["fixed"][0, 2])
    assert out["filter"][-1, 2] >= 1.25 * out["filter"][0, 2], out["filter"][-1]
    ov = {k: overlaps(p[1:], boxes[1:]).mean() for k, p in out.items()}
    assert ov["filter"] > 0.8 and ov["filter"] > ov["fixed"] + 0.1, ov


def test_scale_filter_parameters():
    assert make_tracker("structboost", scale_filter=True).scale_filter == ScaleFilter()
    t = make_tracker("structboost", scale_filter={"prior": 0.003, "n_scales": 17})
    assert t.scale_filter == ScaleFilter(prior=0.003, n_scales=17)
    c = clone(t)
    assert c.scale_filter == t.scale_filter
    assert StructBoostTracker().scale_filter is None
    for bad in (
        {"n_scales": 16},
        {"n_scales": 1},
        {"step": 1.0},
        {"learning_rate": 0.0},
        {"learning_rate": 1.5},
        {"lam": -1.0},
        {"prior": -0.1},
        {"band": (1.2, 2.0)},
        {"band": (0.5, 0.9)},
        {"band": (0.5,)},
        {"features": "sift"},
        {"template_area": 4},
    ):
        with pytest.raises(ValueError):
            ScaleFilter(**bad)
    with pytest.raises(ValueError):
        StructBoostTracker(scale_filter="dsst").init(
            np.zeros((40, 40)), np.array([10.0, 10.0, 10.0, 10.0])
        )


def test_scale_filter_dict_with_an_unknown_field_is_a_value_error():
    """``make_tracker(scale_filter={...})`` (the command-line form): a misspelt field is
    a ValueError naming the fields, not the dataclass's TypeError."""
    with pytest.raises(ValueError, match="n_scales"):
        make_tracker("structboost", scale_filter={"nscales": 17})
