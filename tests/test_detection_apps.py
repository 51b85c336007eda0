"""Detectors and the proposal ranker (issue 13) on tiny synthetic scenes."""

import numpy as np
import pytest

import maxmargin
from maxmargin.apps.detection import (
    CascadeDetector,
    HOGSVMDetector,
    ProposalRanker,
    average_precision,
    recall_overlap_auc,
)
from maxmargin.datasets import make_detection_scenes


@pytest.fixture(scope="module")
def scenes():
    return make_detection_scenes(10, random_state=0), make_detection_scenes(6, random_state=1)


def _ap(det, images, boxes):
    res = det.predict(images)
    return average_precision([r[0] for r in res], [r[1] for r in res], boxes)


def test_hog_svm_detector_with_mining(scenes, tmp_path):
    (tri, trb), (tei, teb) = scenes
    d = HOGSVMDetector(window=(3, 3), C=0.1, max_working_set=300, random_state=0).fit(tri, trb)
    assert d.converged_
    h = d.mining_history_
    assert h[0]["n_hard"] == h[0]["n_negatives"] and h[-1]["n_hard"] < h[0]["n_hard"]
    assert _ap(d, tei, teb) > 0.8
    back = maxmargin.load(maxmargin.save(d, tmp_path / "d.npz"))
    b1, s1 = d.detect(tei[0])
    b2, s2 = back.detect(tei[0])
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_allclose(s1, s2)


@pytest.mark.parametrize("learner", ["gentle", "lacboost"])
def test_cascade_detector(scenes, tmp_path, learner):
    (tri, trb), (tei, teb) = scenes
    kw = dict(window=(3, 3), stage_learner=learner, n_stages=4, max_weak=20, random_state=0)
    c = CascadeDetector(validation_fraction=0.0, **kw).fit(tri, trb)
    assert _ap(c, tei, teb) > 0.4
    # operating points on held-out images (the default): still a working detector
    held = CascadeDetector(validation_fraction=0.3, **kw).fit(tri, trb)
    assert held.cascade_.n_stages_ >= 1 and _ap(held, tei, teb) > 0.1
    back = maxmargin.load(maxmargin.save(c, tmp_path / "c.npz"))
    np.testing.assert_array_equal(back.detect(tei[0])[0], c.detect(tei[0])[0])


@pytest.mark.parametrize("graph,rescaling", [("complete", "margin"), ("star", "slack")])
def test_proposal_ranker_beats_the_unranked_pool(scenes, tmp_path, graph, rescaling):
    (tri, trb), (tei, teb) = scenes
    p = ProposalRanker(
        graph=graph, rescaling=rescaling, n_train_windows=200, n_candidates=300, random_state=0
    ).fit(tri, trb)
    ranked = [p.propose(im, rng=k)[0] for k, im in enumerate(tei)]
    pool = [p.candidates(im, rng=k) for k, im in enumerate(tei)]
    for a, b in zip(ranked, pool):  # the same windows, reordered
        assert sorted(map(tuple, a)) == sorted(map(tuple, b))
    assert recall_overlap_auc(ranked, teb, 10) > recall_overlap_auc(pool, teb, 10)
    assert recall_overlap_auc(ranked, teb, 300) == pytest.approx(recall_overlap_auc(pool, teb, 300))
    back = maxmargin.load(maxmargin.save(p, tmp_path / "p.npz"))
    np.testing.assert_allclose(
        back.score_windows(tei[0], pool[0]), p.score_windows(tei[0], pool[0])
    )


def test_detector_input_errors(scenes):
    (tri, trb), _ = scenes
    bad = [b.copy() for b in trb]
    bad[0][0, 0] = 70.0  # the box leaves the 80-pixel-wide image
    with pytest.raises(ValueError, match="outside"):
        HOGSVMDetector(window=(3, 3)).fit(tri, bad)
    with pytest.raises(ValueError, match="images but"):
        HOGSVMDetector().fit(tri, trb[:-1])
    with pytest.raises(ValueError, match="positive width"):
        ProposalRanker().fit(tri[:1], [np.array([[1.0, 1.0, 0.0, 5.0]])])
