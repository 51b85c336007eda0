"""Peer trackers for the tracking benchmark, behind our trackers' ``init`` / ``update``
API so that :func:`maxmargin.apps.tracking.track_sequence` runs and scores them exactly
like ours (same frames, same first box, same metrics code, same process).

* OpenCV's contrib trackers (``opencv-contrib-python-headless``, the ``bench`` extra):
  CSRT (Lukezic et al., "Discriminative correlation filter with channel and spatial
  reliability", CVPR 2017), KCF (Henriques et al., "High-speed tracking with kernelized
  correlation filters", TPAMI 2015) with its default ``detect_thresh`` (0.5) and with
  ``detect_thresh=0`` (the default stops updating after a few frames on these videos:
  ``update`` reports a failure and OpenCV keeps the old box), and MIL (Babenko, Yang &
  Belongie, CVPR 2009).
* dlib's correlation tracker (Danelljan et al.'s DSST, "Accurate scale estimation for
  robust visual tracking", BMVC 2014; ``dlib-bin``).
* :class:`StoredTrack`: replays a stored result file (e.g. Struck's OTB result boxes,
  Hare, Saffari & Torr, ICCV 2011), one 1-based ``x,y,w,h`` row per frame.

On a reported failure a peer keeps its previous box (what a user of its API sees).
OpenCV runs on one thread (``cv2.setNumThreads(1)``), like our trackers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: name -> (OpenCV factory name, parameters)
OPENCV = {
    "csrt": ("TrackerCSRT", {}),
    "kcf": ("TrackerKCF", {}),
    "kcf_thresh0": ("TrackerKCF", {"detect_thresh": 0.0}),
    "mil": ("TrackerMIL", {}),
}
PEERS = (*OPENCV, "dlib_dsst")


def _bgr(frame) -> np.ndarray:
    a = np.asarray(frame)
    if a.dtype != np.uint8:
        a = (np.clip(a, 0, 1) * 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    return np.ascontiguousarray(a[:, :, 2::-1])  # RGB -> BGR


class OpenCVTracker:
    """An OpenCV tracker (``cv2.Tracker*``) with the init/update API of ours."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_params(self) -> dict:
        return {"opencv": OPENCV[self.name][0], **OPENCV[self.name][1]}

    def init(self, frame, box, labelled=()):
        import cv2

        cv2.setNumThreads(1)  # one core, as ours (NUMBA_NUM_THREADS=1)
        cls, params = OPENCV[self.name]
        p = getattr(cv2, cls + "_Params")()
        for k, v in params.items():
            setattr(p, k, v)
        self._t = getattr(cv2, cls + "_create")(p)
        b = np.asarray(box, dtype=np.float64)
        self.box_ = b.copy()
        self._t.init(_bgr(frame), tuple(int(v) for v in np.round(b)))
        self.n_failures_ = 0
        self.timing_ = {}
        return self

    def update(self, frame) -> np.ndarray:
        ok, rect = self._t.update(_bgr(frame))
        if ok:
            self.box_ = np.asarray(rect, dtype=np.float64)
        else:
            self.n_failures_ += 1
        return self.box_.copy()


class DlibTracker:
    """dlib's ``correlation_tracker`` (DSST) with the init/update API of ours."""

    name = "dlib_dsst"

    def get_params(self) -> dict:
        return {}

    def init(self, frame, box, labelled=()):
        import dlib

        x, y, w, h = (float(v) for v in box)
        self._t = dlib.correlation_tracker()
        self._t.start_track(
            np.ascontiguousarray(_bgr(frame)[:, :, ::-1]),
            dlib.drectangle(x, y, x + w - 1, y + h - 1),
        )
        self.timing_ = {}
        return self

    def update(self, frame) -> np.ndarray:
        self._t.update(np.ascontiguousarray(_bgr(frame)[:, :, ::-1]))
        r = self._t.get_position()
        return np.array([r.left(), r.top(), r.width(), r.height()], dtype=np.float64)


class StoredTrack:
    """Replays stored boxes (0-based, one row per frame) as a tracker."""

    def __init__(self, boxes, name: str = "stored") -> None:
        self.boxes = np.asarray(boxes, dtype=np.float64)
        self.name = name

    def get_params(self) -> dict:
        return {}

    def init(self, frame, box, labelled=()):
        self._k = len(labelled)
        self.timing_ = {}
        return self

    def update(self, frame) -> np.ndarray:
        self._k += 1
        return self.boxes[min(self._k, len(self.boxes) - 1)].copy()


def stored_boxes(folder, seq_name: str, tracker: str = "Struck"):
    """The stored result boxes of ``tracker`` on ``seq_name`` in ``folder``: a text file
    ``<seq>_<tracker>.txt`` (1-based OTB rows) or OTB's ``<seq>_<tracker>.mat``
    (``results{1}.res``, 1-based ``rect`` rows); 0-based (n, 4), or None if absent."""
    from maxmargin.apps.tracking import read_boxes

    folder = Path(folder)
    for stem in (
        f"{seq_name}_{tracker}",
        f"{seq_name.lower()}_{tracker}",
        f"{seq_name}_{tracker.lower()}",
    ):
        txt = folder / f"{stem}.txt"
        if txt.is_file():
            return read_boxes(txt)
        mat = folder / f"{stem}.mat"
        if mat.is_file():
            from scipy.io import loadmat

            r = loadmat(mat, simplify_cells=True)["results"]
            r = r[0] if isinstance(r, (list, np.ndarray)) and not isinstance(r, dict) else r
            b = np.asarray(r["res"], dtype=np.float64).reshape(-1, 4).copy()
            b[:, :2] -= 1.0
            return b
    return None


def make_peer(name: str):
    if name in OPENCV:
        return OpenCVTracker(name)
    if name == "dlib_dsst":
        return DlibTracker()
    raise ValueError(f"unknown peer {name!r}; choose one of {list(PEERS)}")
