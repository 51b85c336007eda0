"""Sequences with sparse ground truth (issue 30): MIL-track layouts, PNG frames, metrics
over the labelled frames only (checked against per-frame loops)."""

import math

import numpy as np
import pytest

from data_makers import square_video
from maxmargin.apps.tracking import (
    centre_errors,
    load_sequence,
    make_tracker,
    overlaps,
    summary,
    track_sequence,
)
from maxmargin.apps.tracking.data import labelled_mask, read_boxes


def _frames(folder, n, size=(40, 50), ext="png", name="{:04d}"):
    import imageio.v3 as iio

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        img = (rng.random(size) * 255).astype(np.uint8)
        iio.imwrite(folder / (name.format(k + 1) + "." + ext), img)


# MIL-track's 0-based ground truth: every 2nd frame annotated, 0,0,0,0 elsewhere
MIL_ROWS = ["4,5,10,12", "0,0,0,0", "6,5,10,12", "0,0,0,0", "8,7,10,12"]
TRUE = np.array([[4, 5, 10, 12], [np.nan] * 4, [6, 5, 10, 12], [np.nan] * 4, [8, 7, 10, 12]])


def test_otb_layout_with_unlabelled_rows(tmp_path):
    root = tmp_path / "david"
    _frames(root / "img", 5)
    # 1-based rows as in OTB; 0,0,0,0 = not annotated
    rows = [r if r == "0,0,0,0" else ",".join(str(v) for v in _one_based(r)) for r in MIL_ROWS]
    (root / "groundtruth_rect.txt").write_text("\n".join(rows) + "\n")
    seq = load_sequence(root)
    np.testing.assert_array_equal(seq.boxes, TRUE)
    np.testing.assert_array_equal(seq.labelled, [True, False, True, False, True])
    assert seq.frame(0).shape == (40, 50)


def _one_based(row):
    x, y, w, h = (float(v) for v in row.split(","))
    return x + 1, y + 1, w, h


def test_labelled_file_and_mil_files(tmp_path):
    # groundtruth_labelled.txt: frame, x, y, w, h (1-based frames and coordinates)
    root = tmp_path / "tiger2"
    _frames(root / "img", 5)
    lines = [
        f"{k + 1},{b[0] + 1:g},{b[1] + 1:g},{b[2]:g},{b[3]:g}"
        for k, b in enumerate(TRUE)
        if np.isfinite(b[0])
    ]
    (root / "groundtruth_labelled.txt").write_text("\n".join(lines) + "\n")
    np.testing.assert_array_equal(load_sequence(root).boxes, TRUE)
    # MIL's own layout: imgs/img000NN.png from frame 0, <seq>_gt.txt 0-based and
    # <seq>_frames.txt "first,last" (here frames 1..5 of imgs/ 0..6)
    mil = tmp_path / "mil"
    _frames(mil / "imgs", 7, name="img{:05d}")  # img00001 .. img00007
    (mil / "imgs" / "img00001.png").rename(mil / "imgs" / "img00000.png")
    (mil / "seq_gt.txt").write_text("\n".join(MIL_ROWS) + "\n")
    (mil / "seq_frames.txt").write_text("2,6\n")
    seq = load_sequence(mil)
    np.testing.assert_array_equal(seq.boxes, TRUE)
    assert [p.name for p in seq.frames] == [f"img{k:05d}.png" for k in range(2, 7)]
    # a MIL gt file beside an img/ folder (0-based coordinates)
    m2 = tmp_path / "m2"
    _frames(m2 / "img", 5)
    (m2 / "mil_original").mkdir()
    (m2 / "mil_original" / "m2_gt.txt").write_text("\n".join(MIL_ROWS) + "\n")
    np.testing.assert_array_equal(load_sequence(m2).boxes, TRUE)


@pytest.mark.parametrize(
    "name, text, match",
    [
        ("groundtruth_rect.txt", "0,0,0,0\n5,6,10,12\n", "first frame has no box"),
        ("groundtruth_rect.txt", "0,0,0,0\n0,0,0,0\n", "no frame is annotated"),
        ("groundtruth_rect.txt", "5,6,10,12\n0,0,0,5\n", "zero or negative"),
        ("groundtruth_labelled.txt", "1,5,6,10,12\n9,5,6,10,12\n", "not one of 1..2"),
        ("groundtruth_labelled.txt", "1,5,6,10,12\n1,5,6,10,12\n", "twice"),
        ("groundtruth_labelled.txt", "1,5,6,10\n", "5 values"),
        ("groundtruth_labelled.txt", "2,5,6,10,12\n", "first frame has no box"),
    ],
)
def test_sparse_ground_truth_errors(tmp_path, name, text, match):
    root = tmp_path / "s"
    _frames(root / "img", 2)
    (root / name).write_text(text)
    with pytest.raises(ValueError, match=match):
        load_sequence(root)


def test_read_boxes_keeps_other_zero_sizes_an_error(tmp_path):
    p = tmp_path / "b.txt"
    p.write_text("1,1,5,5\n0,0,0,0\n")
    b = read_boxes(p)
    assert np.isnan(b[1]).all() and labelled_mask(b).tolist() == [True, False]


def _brute_summary(pred, truth):
    """Per-frame loops over the labelled frames only."""
    ovs, ces = [], []
    for p, t in zip(pred, truth):
        if any(math.isnan(v) for v in t):
            continue
        ix = max(0.0, min(p[0] + p[2], t[0] + t[2]) - max(p[0], t[0]))
        iy = max(0.0, min(p[1] + p[3], t[1] + t[3]) - max(p[1], t[1]))
        inter = ix * iy
        ovs.append(inter / (p[2] * p[3] + t[2] * t[3] - inter))
        ces.append(math.hypot(p[0] + p[2] / 2 - t[0] - t[2] / 2, p[1] + p[3] / 2 - t[1] - t[3] / 2))
    ths = [k / 20 for k in range(21)]
    auc = sum(sum(o > th for o in ovs) / len(ovs) for th in ths) / len(ths)
    return {
        "overlap": sum(ovs) / len(ovs),
        "centre_error": sum(ces) / len(ces),
        "success_auc": auc,
        "precision_20": sum(c <= 20 for c in ces) / len(ces),
        "n_frames": len(ovs),
    }


@pytest.mark.parametrize("seed", range(5))
def test_metrics_score_only_labelled_frames(seed):
    rng = np.random.default_rng(seed)
    n = 40
    truth = np.column_stack([rng.uniform(0, 50, (n, 2)), rng.uniform(5, 30, (n, 2))])
    pred = truth + np.column_stack([rng.normal(0, 15, (n, 2)), rng.normal(0, 3, (n, 2))])
    pred[:, 2:] = np.maximum(pred[:, 2:], 1)
    truth[rng.random(n) < 0.6] = np.nan
    truth[0] = [10, 10, 10, 10]
    got, want = summary(pred, truth), _brute_summary(pred, truth)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
    ov = overlaps(pred, truth)
    assert np.array_equal(np.isnan(ov), np.isnan(truth[:, 0]))
    assert np.isnan(centre_errors(pred, truth)[np.isnan(truth[:, 0])]).all()


def _square_video(n=21, seed=0):
    k = np.arange(n)
    return square_video(10 + k, 12 + k % 5, (48, 64), 12, seed, block=4)


def test_track_sequence_on_sparse_ground_truth():
    frames, boxes = _square_video()
    sparse = np.full_like(boxes, np.nan)
    sparse[::5] = boxes[::5]  # frames 0, 5, 10, 15, 20 annotated
    fast = dict(n_predict=200, n_train=60, search_radius=8.0, window=8)
    # one labelled frame: frames 1..20 tracked, frames 5, 10, 15, 20 scored
    pred, info = track_sequence(
        make_tracker("ssvm", random_state=0, **fast), frames, sparse, n_init=1
    )
    assert info["init_frames"] == [0] and np.isfinite(pred).all()
    assert info["metrics"]["n_frames"] == 4
    lab = labelled_mask(sparse)
    lab[0] = False
    want = _brute_summary(pred[lab], sparse[lab])
    for k, v in want.items():
        assert info["metrics"][k] == pytest.approx(v, rel=1e-12), k
    # the paper's protocol: the first 3 labelled frames (0, 5, 10) initialise, frames
    # 11..20 are tracked, 15 and 20 scored; the frames in between are not tracked
    pred, info = track_sequence(
        make_tracker("ssvm", random_state=0, **fast), frames, sparse, n_init=3
    )
    assert info["init_frames"] == [0, 5, 10] and info["n_init"] == 3
    assert info["metrics"]["n_frames"] == 2
    assert np.isnan(pred[1:5]).all() and np.isnan(pred[6:10]).all()
    np.testing.assert_array_equal(pred[[0, 5, 10]], boxes[[0, 5, 10]])
    assert np.isfinite(pred[11:]).all()
    # every frame annotated: the first n_init frames, as before
    _, info = track_sequence(make_tracker("ssvm", random_state=0, **fast), frames, boxes, n_init=3)
    assert info["init_frames"] == [0, 1, 2] and info["metrics"]["n_frames"] == 18
    with pytest.raises(ValueError, match="first frame"):
        track_sequence(make_tracker("ssvm", **fast), frames, np.vstack([sparse[1:], sparse[:1]]))
