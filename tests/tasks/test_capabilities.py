"""Tasks declare what they can do (``StructuredTask.capabilities``); the solvers read the
declaration instead of the task's type."""

import numpy as np
import pytest

from maxmargin.tasks.base import StructuredTask
from maxmargin.tasks.chain import ChainTask
from maxmargin.tasks.classification import BinaryTask, MultiClassTask
from maxmargin.tasks.crf import CRFTask
from maxmargin.tasks.ranking import RankingTask


@pytest.mark.parametrize(
    "task, has, lacks",
    [
        (
            MultiClassTask(),
            {"listed_outputs", "smoothed_risk", "exact_polish", "n_slack", "linear_ssvm"},
            set(),
        ),
        (BinaryTask(), {"listed_outputs", "smoothed_risk", "n_slack", "one_slack"}, set()),
        (
            RankingTask(),
            {"smoothed_risk", "one_slack"},
            {"listed_outputs", "n_slack", "linear_ssvm"},
        ),
        (ChainTask(), {"smoothed_risk", "one_slack", "linear_ssvm"}, {"exact_polish", "n_slack"}),
        (CRFTask(), {"sharded_oracle", "one_slack", "linear_ssvm"}, {"smoothed_risk", "n_slack"}),
    ],
    ids=["multiclass", "binary", "ranking", "chain", "crf"],
)
def test_declared_capabilities(task, has, lacks):
    if isinstance(task, (MultiClassTask, BinaryTask)):  # outputs are listed once bound
        y = np.arange(8) % (3 if isinstance(task, MultiClassTask) else 2)
        task = task.bind(np.random.default_rng(0).normal(size=(8, 2)), y)
    caps = task.capabilities
    assert isinstance(caps, frozenset)
    assert has <= caps
    assert not (lacks & caps)


def test_capabilities_follow_the_flags():
    """A new task gets its capabilities from the flags it sets, without any solver or
    learner knowing its type."""

    class OneSlackOnly(StructuredTask):
        formulations = ("1-slack",)
        extra_capabilities = frozenset({"sharded_oracle"})
        dense_outputs = False

    OneSlackOnly.__abstractmethods__ = frozenset()  # the flags are all this test needs
    caps = OneSlackOnly().capabilities
    assert caps == {"one_slack", "sharded_oracle", "exact_polish"}


def test_a_new_task_trains_without_touching_the_learner():
    """StructSVM reads only the task's declarations (``linear_ssvm``, ``linear_solvers``,
    ``structured_inputs``) and its methods: a task class it has never seen -- here one
    that wraps a chain task without subclassing it -- trains and predicts like the task
    it wraps, and its solver restriction is honoured."""
    from data_makers import make_chain_data
    from maxmargin import StructSVM

    class Wrapped(StructuredTask):
        linear_ssvm = True
        structured_inputs = True
        linear_solvers = ("n-slack",)

        def bind(self, X, y):
            out = Wrapped()
            out.inner = ChainTask().bind(X, y)
            out.n_slots = out.inner.n_slots
            return out

        @property
        def n_features_in(self):
            return self.inner.n_features_in

        def linear_model(self):
            return self.inner.linear_model()

        def predict_linear(self, X, w):
            return self.inner.predict_linear(X, w)

        def score_predictions(self, y_true, y_pred):
            return self.inner.score_predictions(y_true, y_pred)

    Wrapped.__abstractmethods__ = frozenset()
    X, y = make_chain_data(n=30, seed=0)
    ours = StructSVM(task=Wrapped(), C=1.0, solver="n-slack", random_state=0).fit(X, y)
    ref = StructSVM(task=ChainTask(), C=1.0, solver="n-slack", random_state=0).fit(X, y)
    np.testing.assert_array_equal(ours.coef_, ref.coef_)
    for a, b in zip(ours.predict(X), ref.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert ours.score(X, y) == ref.score(X, y)
    with pytest.raises(ValueError, match="n-slack"):
        StructSVM(task=Wrapped(), solver="1-slack").fit(X, y)
    with pytest.raises(ValueError, match="linear joint features"):
        StructSVM(task=RankingTask()).fit(X, y)
