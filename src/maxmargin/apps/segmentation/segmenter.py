"""Figure/ground segmentation with superpixel CRFs learned by StructBoost or an SSVM.

The pipeline of StructBoost Sec. 4.5 (Shen, Lin & van den Hengel, IEEE TPAMI 2014):

1. SLIC superpixels and feature groups per superpixel (:mod:`.features`);
2. one boosted classifier per feature group (discrete AdaBoost over decision stumps,
   Freund & Schapire, JCSS 55, 1997), giving unary potentials ``U_g(y_p, x) = -s(y_p)
   F_g(x_p)`` with ``s(y) = 2y - 1`` ([Shen2014 eq. 32]; the PDF's ``-y F`` is for labels in {-1,
   +1}), and a bias potential ``-s(y_p)``.  On training images the classifiers are
   *cross-fitted*: each image's potentials
   come from classifiers trained on the other folds, so that the CRF learns how much to
   trust them on unseen data rather than on memorised training data;
3. pairwise potentials on adjacent superpixels: ``V_0 = 1`` (a Potts term),
   ``V_1 = exp(-||luv_p - luv_q|| / sigma)`` ([Shen2014 eq. 33]; ``sigma`` = the image's mean LUV
   distance over edges -- the PDF's ``exp(-||.||)`` would underflow for LUV values of
   order 100) and ``V_2 = shared boundary length / its mean over the image's edges``
   ([Shen2014 eq. 34], scale-free);
4. CRF weights learned by StructBoost (non-linear, :class:`~maxmargin.tasks.crf.CRFTask`
   with :class:`~maxmargin.weak.nonneg.NonNegative` stumps) or by a linear 1-slack SSVM on
   the same potentials, or no CRF (``learner="unary"``: the sign of the classifier on all
   features together, the "AdaBoost" row of Table 6);
5. prediction by one graph cut per image, labels painted back to pixels.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from maxmargin._registry import register
from maxmargin._validation import (
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    VERBOSE,
    Interval,
    Options,
    add_intercept,
    as_generator,
    json_params,
    store_params,
    validate_params,
)
from maxmargin.apps.segmentation.features import as_rgb, image_features
from maxmargin.learners.binary_adaboost import discrete_adaboost
from maxmargin.learners.ssvm import StructSVM
from maxmargin.learners.structboost import StructBoost
from maxmargin.tasks.crf import CRFGraph, CRFTask
from maxmargin.weak import DecisionStump, Stumps
from maxmargin.weak.nonneg import NonNegative

__all__ = ["Segmenter", "check_image_mask"]


class _BinaryAdaBoost:
    """Discrete AdaBoost with exact stumps (the package's one AdaBoost,
    :func:`~maxmargin.learners.binary_adaboost.discrete_adaboost`); ``decision`` is
    normalised to [-1, 1]."""

    def __init__(self, n_iter: int):
        self.n_iter = n_iter

    def fit(self, X, y):
        self.hyps_, self.alphas_ = discrete_adaboost(DecisionStump(), X, 2.0 * y - 1.0, self.n_iter)
        return self

    def decision(self, X):
        if self.hyps_ is None:
            return np.zeros(X.shape[0])
        return (self.hyps_.evaluate(X).T @ self.alphas_) / self.alphas_.sum()

    def to_arrays(self) -> dict:
        if self.hyps_ is None:
            return {"alphas": np.zeros(0)}
        return {
            "alphas": self.alphas_,
            **{f"hyp.{k}": v for k, v in self.hyps_.to_arrays().items()},
        }

    @classmethod
    def from_arrays(cls, arrays):
        clf = cls(len(arrays["alphas"]))
        clf.alphas_ = np.asarray(arrays["alphas"], dtype=np.float64)
        hyp = {k[4:]: v for k, v in arrays.items() if k.startswith("hyp.")}
        clf.hyps_ = Stumps.from_arrays(hyp) if len(clf.alphas_) else None
        return clf


def check_image_mask(image, mask):
    """Validated (float RGB image, boolean mask) pair; ValueError on size or values."""
    img = as_rgb(image)
    m = np.asarray(mask)
    if m.ndim == 3 and m.shape[2] in (3, 4):
        m = m[:, :, 0]
    if m.ndim != 2:
        raise ValueError(f"masks must be 2-d, got shape {m.shape}")
    if m.shape != img.shape[:2]:
        raise ValueError(f"mask of shape {m.shape} does not match image of shape {img.shape[:2]}")
    if m.dtype != bool:
        vals = np.unique(m)
        if np.all(np.isin(vals, (0, 1))):
            m = m == 1
        elif np.all(np.isin(vals, (0, 255))):
            m = m == 255
        else:
            raise ValueError(
                "masks must be binary (bool, 0/1 or 0/255); got values "
                f"{vals[:6].tolist()}{'...' if len(vals) > 6 else ''} "
                "(threshold grey masks first, e.g. mask > 127)"
            )
    return img, m


@register
class Segmenter(BaseEstimator):
    """Binary (figure/ground) image segmentation with a learned superpixel CRF.

    Parameters
    ----------
    learner : {"structboost", "ssvm", "unary"}, default="structboost"
        How the CRF weights are learned: StructBoost (non-linear, stumps on the
        potentials), a linear 1-slack structured SVM, or no CRF at all.
    n_segments : int, default=150
        Approximate number of SLIC superpixels per image.
    compactness : float, default=10.0
        SLIC compactness.
    sigma : float, default=1.0
        Gaussian smoothing of the image before SLIC.
    patch_sizes : tuple of int, default=(8, 16, 32)
        Sizes of the square patches for the LBP and HOG patch features.
    unary_iter : int, default=100
        AdaBoost rounds of every unary classifier.
    n_folds : int, default=3
        Folds of the cross-fitting of the training images' unary potentials.
    C : float, default=10.0
        Regularisation of StructBoost / the SSVM (weight of the mean hinge).
    max_iter : int, default=50
        StructBoost iterations (the paper's 50).
    loss : {"area", "hamming"}, default="area"
        Per-image loss: fraction of wrong pixels (superpixels weighted by area) or of
        wrong superpixels ([Shen2014 eq. 26], normalised).
    max_time : float or None
        Time limit (seconds) of the CRF learner.
    random_state : int, Generator or None
        Folds of the cross-fitting and tie breaking in StructBoost.
    verbose : int, default=0
    """

    def __init__(
        self,
        *,
        learner: str = "structboost",
        n_segments: int = 150,
        compactness: float = 10.0,
        sigma: float = 1.0,
        patch_sizes=(8, 16, 32),
        unary_iter: int = 100,
        n_folds: int = 3,
        C: float = 10.0,
        max_iter: int = 50,
        loss: str = "area",
        max_time: float | None = None,
        random_state=None,
        verbose: int = 0,
    ):
        store_params(self, locals())

    _parameter_constraints = {
        "learner": [Options("structboost", "ssvm", "unary")],
        "n_segments": [POSITIVE_INT],
        "compactness": [POSITIVE],
        "sigma": [Interval(float, 0, None, closed="left")],
        "patch_sizes": [tuple, list],
        "unary_iter": [POSITIVE_INT],
        "n_folds": [POSITIVE_INT],
        "C": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        "loss": [Options("area", "hamming")],
        "max_time": [None, POSITIVE],
        "random_state": RANDOM_STATE,
        "verbose": VERBOSE,
    }

    # -- features --------------------------------------------------------------------
    def _features(self, img):
        return image_features(
            img, self.n_segments, self.compactness, tuple(self.patch_sizes), self.sigma
        )

    @staticmethod
    def _group_matrix(feats, name):
        if name == "all":
            return np.hstack([f for _, f in sorted(feats.groups.items())])
        return feats.groups[name]

    def _graph(self, feats, F) -> CRFGraph:
        """CRF graph of one image from its per-group discriminants F (n, G)."""
        # label 0: +F, label 1: -F ([Shen2014 eq. 32]), plus a bias potential (-1 for label 1) so
        # that a linear CRF can move the decision threshold
        Fb = add_intercept(F)
        unary = np.stack([Fb, -Fb], axis=1)
        e = feats.edges
        if len(e):
            dist = np.linalg.norm(feats.mean_luv[e[:, 0]] - feats.mean_luv[e[:, 1]], axis=1)
            v1 = np.exp(-dist / max(float(dist.mean()), 1e-12))
            v2 = feats.boundary / feats.boundary.mean()
            V = np.stack([np.ones(len(e)), v1, v2], axis=1)
        else:
            V = np.zeros((0, 3))
        return CRFGraph(unary, e, V, area=feats.area)

    # -- fitting ---------------------------------------------------------------------
    def fit(self, images, masks):
        """Learn from lists of images (grey or RGB arrays) and boolean masks."""
        validate_params(self)
        images, masks = list(images), list(masks)
        if not images:
            raise ValueError("need at least one training image")
        if len(images) != len(masks):
            raise ValueError(f"{len(images)} images but {len(masks)} masks")
        pairs = [check_image_mask(i, m) for i, m in zip(images, masks)]
        rng = as_generator(self.random_state)
        feats = [self._features(img) for img, _ in pairs]
        labels = [f.labels_from_mask(m) for f, (_, m) in zip(feats, pairs)]
        self.groups_ = [*sorted(feats[0].groups), "all"]
        n_img = len(feats)
        y_all = np.concatenate(labels).astype(np.float64)
        img_of = np.repeat(np.arange(n_img), [f.n for f in feats])
        k = max(1, min(int(self.n_folds), n_img))
        fold_of_img = rng.permutation(n_img) % k
        fold = fold_of_img[img_of]
        Ftrain = np.zeros((len(y_all), len(self.groups_)))
        self.unary_models_ = []
        for g, name in enumerate(self.groups_):
            X = np.vstack([self._group_matrix(f, name) for f in feats])
            if k > 1:  # cross-fitting: out-of-fold potentials on the training images
                for j in range(k):
                    out = fold == j
                    clf = _BinaryAdaBoost(int(self.unary_iter)).fit(X[~out], y_all[~out])
                    Ftrain[out, g] = clf.decision(X[out])
            self.unary_models_.append(_BinaryAdaBoost(int(self.unary_iter)).fit(X, y_all))
            if k == 1:
                Ftrain[:, g] = self.unary_models_[-1].decision(X)
        offs = np.concatenate([[0], np.cumsum([f.n for f in feats])])
        graphs = [self._graph(f, Ftrain[a:b]) for f, a, b in zip(feats, offs[:-1], offs[1:])]
        # kept for refitting the CRF alone (other C or learner), see fit_crf
        self.train_graphs_, self.train_labels_ = graphs, labels
        self.fit_crf(graphs, labels)
        self.n_train_images_ = n_img
        return self

    def fit_crf(self, graphs, labels):
        """(Re)learn only the CRF weights on given graphs (e.g. ``train_graphs_`` with
        another ``C`` or ``learner``), keeping the unary classifiers."""
        self.crf_ = None
        self.pairwise_active_ = None
        if self.learner == "structboost":
            self.crf_ = StructBoost(
                task=CRFTask(loss=self.loss),
                weak_learner=NonNegative("stump"),
                C=float(self.C),
                max_iter=int(self.max_iter),
                max_time=self.max_time,
                random_state=self.random_state,
                verbose=self.verbose,
            ).fit(graphs, labels)
        elif self.learner == "ssvm":
            # the task declares its pairwise weights non-negative (the potentials are
            # >= 0), so the 1-slack QP keeps every cut weight >= 0 and the graph cuts
            # exact (Szummer, Kohli & Hoiem, ECCV 2008)
            self.crf_ = StructSVM(
                task=CRFTask(loss=self.loss),
                C=float(self.C),
                solver="1-slack",
                max_time=self.max_time,
                verbose=self.verbose,
            ).fit(graphs, labels)
        return self

    def _restrict(self, graph, active=None):
        """The graph with only the active pairwise potentials (models saved by versions
        whose SSVM dropped the potentials of negative weight keep ``pairwise_active_``)."""
        active = getattr(self, "pairwise_active_", None) if active is None else active
        if active is None or np.all(active):
            return graph
        return CRFGraph(graph.unary, graph.edges, graph.pairwise[:, active], graph.area)

    # -- prediction ------------------------------------------------------------------
    def _unaries(self, image):
        check_is_fitted(self, "unary_models_")
        feats = self._features(as_rgb(image))
        F = np.stack(
            [
                m.decision(self._group_matrix(feats, name))
                for m, name in zip(self.unary_models_, self.groups_)
            ],
            axis=1,
        )
        return feats, F

    def crf_predict(self, graphs):
        """Superpixel labellings of CRF graphs built by this segmenter."""
        return self.crf_.predict([self._restrict(g) for g in graphs])

    def predict_superpixels(self, image):
        """(superpixel map, superpixel labels, unary discriminant of the 'all' group)."""
        feats, F = self._unaries(image)
        if self.crf_ is None:
            lab = (F[:, -1] > 0).astype(np.int64)
        else:
            lab = self.crf_predict([self._graph(feats, F)])[0]
        return feats.superpixels, lab, F[:, -1]

    def predict(self, image) -> np.ndarray:
        """Boolean foreground mask of one image (its own size)."""
        sp, lab, _ = self.predict_superpixels(image)
        return lab[sp].astype(bool)

    def decision_function(self, image) -> np.ndarray:
        """Per-pixel foreground score: the predicted label (0/1) plus a tie-breaker in
        (-0.5, 0.5) from the unary classifier on all features, so that ranking pixels by
        it orders them by the segmentation first (for the precision = recall point)."""
        sp, lab, f = self.predict_superpixels(image)
        return (lab + 0.49 * np.clip(f, -1.0, 1.0))[sp]

    # -- persistence (maxmargin.save / load, pickle-free) -----------------------------
    def _get_state(self):
        check_is_fitted(self, "unary_models_")
        arrays = {}
        for g, m in enumerate(self.unary_models_):
            arrays.update({f"unary{g}.{k}": v for k, v in m.to_arrays().items()})
        meta = {
            "params": json_params(self),
            "groups": list(self.groups_),
            "n_train_images": int(self.n_train_images_),
            "crf_class": None if self.crf_ is None else type(self.crf_).__name__,
        }
        if self.pairwise_active_ is not None:
            arrays["pairwise_active"] = np.asarray(self.pairwise_active_, dtype=bool)
        if self.crf_ is not None:
            crf_meta, crf_arrays = self.crf_._get_state()
            meta["crf"] = crf_meta
            arrays.update({f"crf.{k}": v for k, v in crf_arrays.items()})
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        params = dict(meta["params"])
        params["patch_sizes"] = tuple(params["patch_sizes"])
        est = cls(**params)
        est.groups_ = list(meta["groups"])
        est.n_train_images_ = int(meta["n_train_images"])
        est.unary_models_ = []
        for g in range(len(est.groups_)):
            pre = f"unary{g}."
            sub = {k[len(pre) :]: v for k, v in arrays.items() if k.startswith(pre)}
            est.unary_models_.append(_BinaryAdaBoost.from_arrays(sub))
        est.pairwise_active_ = (
            np.asarray(arrays["pairwise_active"], dtype=bool)
            if "pairwise_active" in arrays
            else None
        )
        kinds = {"StructBoost": StructBoost, "StructSVM": StructSVM}
        est.crf_ = None
        if meta["crf_class"] is not None:
            crf_arrays = {k[4:]: v for k, v in arrays.items() if k.startswith("crf.")}
            est.crf_ = kinds[meta["crf_class"]]._from_state(meta["crf"], crf_arrays)
        return est
