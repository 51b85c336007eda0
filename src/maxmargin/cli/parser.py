"""The argparse parser of the ``maxmargin`` command line."""

from __future__ import annotations

import argparse

from maxmargin.cli.commands import cmd_demo, cmd_evaluate, cmd_fit, cmd_info, cmd_predict
from maxmargin.cli.segment import cmd_segment_fit, cmd_segment_predict


def _version() -> str:
    from maxmargin import __version__

    return str(__version__)


def _C_list(text: str) -> list[float]:
    """``--C 100`` or ``--C 1,10,100``."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a number or comma-separated list: {text!r}"
        ) from None
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"C must be positive, got {text!r}")
    return values


def _label_column(text: str) -> int | str:
    """``--label-column`` accepts an index (``-1``, ``0``) or a header name."""
    try:
        return int(text)
    except ValueError:
        return text


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for all subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show full tracebacks instead of one-line errors",
    )
    data_opts = argparse.ArgumentParser(add_help=False)
    data_opts.add_argument(
        "--format",
        choices=["auto", "svmlight", "csv"],
        default="auto",
        help="data file format (default: by extension, then by content)",
    )
    data_opts.add_argument(
        "--zero-based",
        choices=["auto", "yes", "no"],
        default=None,
        help="svmlight feature indices start at 0 (yes) or 1 (no); default: as the model's "
        "training file (recorded at fit), else detected",
    )
    json_opt = argparse.ArgumentParser(add_help=False)
    json_opt.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    parser = argparse.ArgumentParser(
        prog="maxmargin",
        description="Large-margin structured output learning (StructBoost).",
    )
    # before the subcommand: its own dest (a subcommand's defaults would overwrite "debug")
    parser.add_argument(
        "--debug", dest="debug_top", action="store_true", help="show full tracebacks"
    )
    parser.set_defaults(debug=False)
    parser.add_argument("--version", action="version", version=f"maxmargin {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    fit = sub.add_parser(
        "fit",
        parents=[common, data_opts, json_opt],
        help="train a StructBoostClassifier (or a StructBoostRanker with --rank)",
        description="Train a StructBoostClassifier on DATA and save it to MODEL.  With "
        "--rank, train a StructBoostRanker (AUC / ordinal regression / learning to rank) "
        "on relevance grades instead; queries come from the qid: tokens of an svmlight "
        "(SVM-light / svm_rank) file such as '2 qid:1 1:0.5 3:0.1', and pairs are only "
        "formed inside a query.  A file without qid, or a CSV file, is one query.",
    )
    fit.add_argument("data", metavar="DATA", help="training data (svmlight/LIBSVM or CSV)")
    fit.add_argument("-o", "--output", metavar="MODEL", required=True, help="model file to write")
    fit.add_argument(
        "--label-column",
        type=_label_column,
        default=-1,
        help="CSV label column: index or header name (default: -1, the last)",
    )
    fit.add_argument(
        "--model",
        choices=[
            "structboost",
            "multiboost-cw",
            "multiboost",
            "adaboost-mh",
            "adaboost-ecc",
            "adaboost-mo",
            "ssvm",
            "svm",
            "ranksvm",
        ],
        default="structboost",
        help="model family (structboost); with --rank: structboost (StructBoostRanker) or "
        "ranksvm (RankSVM, linear)",
    )
    fit.add_argument(
        "--C",
        type=_C_list,
        default=[100.0],
        metavar="C[,C...]",
        help="regularisation trade-off (100); a comma-separated list is chosen by "
        "--cv-fold cross-validation",
    )
    fit.add_argument("--cv", type=int, default=3, help="folds for choosing C (3)")
    fit.add_argument("--max-iter", type=int, default=200, help="column-generation iterations")
    fit.add_argument(
        "--rank",
        action="store_true",
        help="train a StructBoostRanker: labels are relevance grades (higher = better, "
        "0/1 for AUC), queries from svmlight qid:",
    )
    fit.add_argument(
        "--sharing",
        choices=["shared", "per_class"],
        default=None,
        help="weak learners shared by all classes or per class (shared; not with --rank)",
    )
    fit.add_argument(
        "--taxonomy",
        metavar="FILE",
        default=None,
        help="class tree (JSON, or 'parent child' lines): hierarchical "
        "classification with the tree loss (not with --rank)",
    )
    fit.add_argument(
        "--tree-loss",
        choices=["height", "half_path", "zero_one"],
        default=None,
        help="tree loss with --taxonomy (height)",
    )
    fit.add_argument(
        "--formulation",
        choices=["auto", "1-slack", "n-slack", "m-slack"],
        default="auto",
        help="auto: chosen by problem size for a classifier, 1-slack with --rank "
        "(m-slack = one slack per preference pair, memory O(pairs))",
    )
    fit.add_argument(
        "--master",
        choices=["auto", "fast", "exact"],
        default="auto",
        help="restricted master: fast = smoothed L-BFGS with an exact LP polish, exact = "
        "the LP every iteration (auto: fast where the task supports it)",
    )
    fit.add_argument(
        "--tol", type=float, default=1e-4, help="fast master's relative tolerance (1e-4)"
    )
    fit.add_argument(
        "--graph",
        choices=["complete", "bipartite", "star"],
        default=None,
        help="--rank: which pairs are compared inside a query; complete = every pair "
        "with different relevance (default, as svm_rank), bipartite = the --top-k best "
        "(default: every sample above the lowest grade) above the rest, star = the "
        "best-graded samples above the rest",
    )
    fit.add_argument(
        "--rescaling",
        choices=["unit", "margin", "slack"],
        default=None,
        help="--rank: unit = margin 1 and weight 1 per pair (default); margin / slack = "
        "the pair's relevance gap as its margin / as its weight",
    )
    fit.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="K",
        help="--rank --graph bipartite: size of the upper side in each query",
    )
    fit.add_argument(
        "--normalize",
        choices=["pairs", "query"],
        default=None,
        help="--rank: average the pairwise hinge over all pairs (default) or inside each "
        "query and then over queries",
    )
    fit.add_argument(
        "--weak-learner",
        default="stump",
        help="weak learner: stump (default), hist_stump, tree, hist_tree:D (depth 1-6), ...",
    )
    fit.add_argument("--eps-cp", type=float, default=0.01, help="cutting-plane tolerance")
    fit.add_argument("--eps-cg", type=float, default=1e-6, help="column-generation tolerance")
    fit.add_argument("--max-time", type=float, default=None, help="time budget in seconds")
    fit.add_argument("--seed", type=int, default=0, help="random_state (0: reproducible runs)")
    fit.add_argument(
        "--allow-empty",
        action="store_true",
        help="save a model with no weak learner (it predicts a constant) instead of failing",
    )
    fit.add_argument("--quiet", action="store_true", help="no progress display and no summary")
    fit.set_defaults(handler=cmd_fit)

    label_for_model = (
        "CSV label column: index or header name (default: the last column; for predict "
        "a CSV with exactly the model's number of features is read as unlabelled)"
    )
    predict = sub.add_parser(
        "predict",
        parents=[common, data_opts, json_opt],
        help="predict labels (classifier) or scores (ranker) for DATA",
        description="Write one predicted label per line for each sample in DATA; for a "
        "ranking model, one score per line (higher ranks higher).",
    )
    predict.add_argument("model", metavar="MODEL")
    predict.add_argument("data", metavar="DATA")
    predict.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    predict.add_argument("--label-column", type=_label_column, default=None, help=label_for_model)
    predict.add_argument(
        "--scores",
        action="store_true",
        help="write decision values instead of labels (one row per sample, one column per "
        "class; a single column for binary models and rankers)",
    )
    predict.set_defaults(handler=cmd_predict)

    evaluate = sub.add_parser(
        "evaluate",
        parents=[common, data_opts, json_opt],
        help="score MODEL on labelled DATA",
        description="Error rate, accuracy, confusion matrix and per-class counts.  For a "
        "ranking model: pairwise accuracy, AUC (binary labels), NDCG@10 and MAP, averaged "
        "over the queries of DATA's qid: (the whole file is one query without qid).",
    )
    evaluate.add_argument("model", metavar="MODEL")
    evaluate.add_argument("data", metavar="DATA")
    evaluate.add_argument("--label-column", type=_label_column, default=None, help=label_for_model)
    evaluate.add_argument(
        "--taxonomy",
        metavar="FILE",
        default=None,
        help="also report the tree loss under this class tree (default: "
        "the model's own taxonomy, if it has one)",
    )
    evaluate.set_defaults(handler=cmd_evaluate)

    info = sub.add_parser(
        "info",
        parents=[common, json_opt],
        help="describe a model file",
        description="Estimator, parameters, classes, features, iterations, objective and the "
        "file's format version and checksum, read without executing code.",
    )
    info.add_argument("model", metavar="MODEL")
    info.set_defaults(handler=cmd_info)

    demo = sub.add_parser(
        "demo",
        parents=[common, json_opt],
        help="StructBoost vs AdaBoost vs LinearSVC on scikit-learn's digits",
        description="Compare StructBoost, AdaBoost (SAMME, stumps) and Crammer-Singer LinearSVC "
        "on the digits data and write structboost_convergence.png.",
    )
    demo.add_argument("--out", default=".", metavar="DIR", help="where to write the plot")
    demo.add_argument("--max-iter", type=int, default=100, help="StructBoost iterations (100)")
    demo.add_argument(
        "--formulation", choices=["auto", "1-slack", "n-slack", "m-slack"], default="auto"
    )
    demo.add_argument("--master", choices=["auto", "fast", "exact"], default="auto")
    demo.add_argument("--max-time", type=float, default=None, help="StructBoost time budget (s)")
    demo.add_argument("--seed", type=int, default=0, help="split and model seed (0)")
    demo.add_argument("--quiet", action="store_true", help="no progress display")
    demo.set_defaults(handler=cmd_demo)
    segment = sub.add_parser(
        "segment",
        parents=[common],
        help="figure/ground image segmentation with a learned superpixel CRF",
        description="Train a Segmenter (superpixel CRF learned by StructBoost or an SSVM) "
        "on image/mask folders, or segment images with one and write mask and overlay PNGs.",
    )
    seg_sub = segment.add_subparsers(dest="segment_command", metavar="ACTION")
    sfit = seg_sub.add_parser(
        "fit",
        parents=[common, json_opt],
        help="train on IMAGES and MASKS folders (matched by file name)",
    )
    sfit.add_argument("images", metavar="IMAGES", help="folder of training images")
    sfit.add_argument("masks", metavar="MASKS", help="folder of masks with the same names")
    sfit.add_argument("-o", "--output", metavar="MODEL", required=True, help="model file")
    sfit.add_argument("--learner", choices=["structboost", "ssvm", "unary"], default="structboost")
    sfit.add_argument("--C", type=float, default=10.0, help="CRF regularisation (10)")
    sfit.add_argument("--max-iter", type=int, default=50, help="StructBoost iterations (50)")
    sfit.add_argument("--n-segments", type=int, default=150, help="superpixels per image")
    sfit.add_argument("--unary-iter", type=int, default=100, help="AdaBoost rounds (100)")
    sfit.add_argument("--threshold", type=int, default=128, help="mask threshold (128)")
    sfit.add_argument(
        "--resize-to-mask", action="store_true", help="resize images to their masks' size"
    )
    sfit.add_argument("--max-time", type=float, default=None, help="CRF time budget (s)")
    sfit.add_argument("--seed", type=int, default=0, help="random_state (0)")
    sfit.set_defaults(handler=cmd_segment_fit)
    spred = seg_sub.add_parser(
        "predict",
        parents=[common, json_opt],
        help="segment images; write <name>_mask.png and <name>_overlay.png",
    )
    spred.add_argument("model", metavar="MODEL")
    spred.add_argument("images", metavar="IMAGE", nargs="+", help="image files or folders")
    spred.add_argument("-o", "--output", metavar="DIR", required=True, help="output folder")
    spred.add_argument(
        "--masks",
        metavar="DIR",
        default=None,
        help="true masks with the images' names and sizes (one per image): report scores",
    )
    spred.add_argument("--threshold", type=int, default=128, help="mask threshold (128)")
    spred.set_defaults(handler=cmd_segment_predict)
    from maxmargin.cli.track import add_track_parser

    add_track_parser(sub, parents=[common])
    from maxmargin.cli.detect import add_detect_parser

    add_detect_parser(sub, parents=[common])
    return parser
