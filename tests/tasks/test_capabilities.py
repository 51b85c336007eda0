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
        (MultiClassTask(), {"listed_outputs", "smoothed_risk", "exact_polish", "n_slack"}, set()),
        (BinaryTask(), {"listed_outputs", "smoothed_risk", "n_slack", "one_slack"}, set()),
        (RankingTask(), {"smoothed_risk", "one_slack"}, {"listed_outputs", "n_slack"}),
        (ChainTask(), {"smoothed_risk", "one_slack"}, {"exact_polish", "n_slack"}),
        (CRFTask(), {"sharded_oracle", "one_slack"}, {"smoothed_risk", "n_slack"}),
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
