"""Data loading: svmlight and CSV parsing, format detection, clear errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from maxmargin.datasets import detect_format, load_dataset, peek_n_columns


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


SVM_TEXT = "1 1:0.5 3:2\n2 2:1.5\n# a comment\n\n3 1:-1 2:4e-1\n"


# --------------------------------------------------------------------------- svmlight
def test_svmlight_basic(tmp_path):
    X, y = load_dataset(_write(tmp_path / "d.svm", SVM_TEXT))
    np.testing.assert_array_equal(X, [[0.5, 0, 2], [0, 1.5, 0], [-1, 0.4, 0]])
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, [1, 2, 3])


def test_svmlight_padded_to_n_features(tmp_path):
    X, _ = load_dataset(_write(tmp_path / "d.txt", SVM_TEXT), n_features=6)
    assert X.shape == (3, 6)
    assert not X[:, 3:].any()


def test_svmlight_too_many_features_for_n_features(tmp_path):
    with pytest.raises(ValueError, match=r"d\.svm: .*n_features"):
        load_dataset(_write(tmp_path / "d.svm", SVM_TEXT), n_features=2)


def test_svmlight_gzip_and_sparse(tmp_path):
    path = tmp_path / "d.svm.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(SVM_TEXT)
    X, y = load_dataset(path, dense=False)
    assert sp.issparse(X) and X.shape == (3, 3) and X.nnz == 5
    np.testing.assert_array_equal(y, [1, 2, 3])


def test_svmlight_float_labels_stay_float(tmp_path):
    _, y = load_dataset(_write(tmp_path / "d.svm", "0.5 1:1\n1 1:2\n"))
    assert y.dtype == np.float64


def test_svmlight_unparsable(tmp_path):
    with pytest.raises(ValueError, match=r"bad\.svm: cannot parse as svmlight"):
        load_dataset(_write(tmp_path / "bad.svm", "1 1:abc\n"), format="svmlight")


def test_svmlight_nan(tmp_path):
    path = _write(tmp_path / "nan.svm", "1 1:1\n2 1:nan\n")
    with pytest.raises(ValueError, match="NaN or infinite feature value in sample 2"):
        load_dataset(path)


@pytest.mark.parametrize("fmt", ["svmlight", "csv", "auto"])
def test_empty_file(tmp_path, fmt):
    path = _write(tmp_path / "empty.svm", "# only a comment\n\n")
    with pytest.raises(ValueError, match=r"empty\.svm: empty file"):
        load_dataset(path, format=fmt)


# --------------------------------------------------------------------------- csv
def test_csv_without_header(tmp_path):
    X, y = load_dataset(_write(tmp_path / "d.csv", "1,2,0\n3,4.5,1\n-1,0,2\n"))
    np.testing.assert_array_equal(X, [[1, 2], [3, 4.5], [-1, 0]])
    np.testing.assert_array_equal(y, [0, 1, 2])
    assert y.dtype == np.int64


def test_csv_with_header_and_named_label(tmp_path):
    path = _write(tmp_path / "d.csv", "label,x1,x2\ncat,1,2\ndog,3,4\n")
    X, y = load_dataset(path, label_column="label")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    assert y.tolist() == ["cat", "dog"]
    X0, y0 = load_dataset(path, label_column=0)
    np.testing.assert_array_equal(X0, X)
    assert y0.tolist() == y.tolist()


def test_csv_header_with_numeric_feature_names(tmp_path):
    X, y = load_dataset(_write(tmp_path / "d.csv", "1,2,class\n5,6,0\n7,8,1\n"))
    np.testing.assert_array_equal(X, [[5, 6], [7, 8]])
    np.testing.assert_array_equal(y, [0, 1])


def test_csv_string_labels_without_header(tmp_path):
    _, y = load_dataset(_write(tmp_path / "d.csv", "1,2,a\n3,4,b\n"))
    assert y.tolist() == ["a", "b"]


def test_tsv_and_whitespace(tmp_path):
    X, y = load_dataset(_write(tmp_path / "d.tsv", "1\t2\t0\n3\t4\t1\n"))
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    X2, y2 = load_dataset(_write(tmp_path / "d.dat", "1  2 0\n3 4   1\n"))
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_csv_unlabelled_and_width_check(tmp_path):
    path = _write(tmp_path / "d.csv", "1,2,3\n4,5,6\n")
    X, y = load_dataset(path, label_column=None, n_features=3)
    assert y is None and X.shape == (2, 3)
    assert peek_n_columns(path) == 3
    with pytest.raises(ValueError, match="has 2 feature columns, expected 3"):
        load_dataset(path, n_features=3)


def test_detect_format(tmp_path):
    assert detect_format(_write(tmp_path / "a.data", SVM_TEXT)) == "svmlight"
    assert detect_format(_write(tmp_path / "b.data", "1,2,3\n")) == "csv"
    assert detect_format(_write(tmp_path / "c.csv", SVM_TEXT)) == "csv"  # extension wins


def test_csv_non_numeric_names_line_and_column(tmp_path):
    path = _write(tmp_path / "d.csv", "a,b,y\n1,2,0\n3,oops,1\n")
    with pytest.raises(ValueError, match=r"d\.csv: non-numeric value 'oops' at line 3, column 2"):
        load_dataset(path)


def test_csv_empty_field(tmp_path):
    with pytest.raises(ValueError, match="<empty>"):
        load_dataset(_write(tmp_path / "d.csv", "1,2,0\n3,,1\n"))


@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_csv_nan_inf(tmp_path, bad):
    path = _write(tmp_path / "d.csv", f"1,2,0\n3,{bad},1\n")
    with pytest.raises(ValueError, match=r"NaN or infinite\) at line 2, column 2"):
        load_dataset(path)


def test_csv_nan_label(tmp_path):
    with pytest.raises(ValueError, match="NaN or infinite label at line 2"):
        load_dataset(_write(tmp_path / "d.csv", "1,2,0\n3,4,nan\n"))


def test_csv_ragged(tmp_path):
    path = _write(tmp_path / "d.csv", "1,2,0\n3,4,1\n5,1\n")
    with pytest.raises(ValueError, match="line 3 has 2 columns, expected 3"):
        load_dataset(path)


def test_csv_bad_label_column(tmp_path):
    path = _write(tmp_path / "d.csv", "x,y\n1,0\n")
    with pytest.raises(ValueError, match="'z' not found"):
        load_dataset(path, label_column="z")
    with pytest.raises(ValueError, match="out of range"):
        load_dataset(path, label_column=5)


def test_header_only(tmp_path):
    with pytest.raises(ValueError, match="no data rows"):
        load_dataset(_write(tmp_path / "d.csv", "x,y\n"))


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="unknown data format"):
        load_dataset(_write(tmp_path / "d.csv", "1,0\n"), format="parquet")


# --------------------------------------------------------------------------- svmlight qid
RANK_TEXT = (
    "2 qid:1 1:0.5 3:1\n"
    "0 qid:1 1:0.1\n"
    "1 qid:1 2:0.3\n"
    "1 qid:7 1:0.2 2:0.2  # docid = a\n"
    "0 qid:7 3:0.9\n"
)


def test_svmlight_query_ids(tmp_path):
    path = _write(tmp_path / "rank.txt", RANK_TEXT)  # .txt: found by content sniffing
    assert detect_format(path) == "svmlight"
    X, y, qid = load_dataset(path, query_id=True)
    assert qid.dtype == np.int64
    np.testing.assert_array_equal(qid, [1, 1, 1, 7, 7])
    np.testing.assert_array_equal(y, [2, 0, 1, 1, 0])
    np.testing.assert_array_equal(X[0], [0.5, 0, 1])
    np.testing.assert_array_equal(X[3], [0.2, 0.2, 0])
    # without query_id: the same (X, y), qid tokens ignored
    X2, y2 = load_dataset(path)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_svmlight_query_ids_direct_sparse_and_padded(tmp_path):
    from maxmargin.datasets import load_svmlight

    X, _, qid = load_svmlight(
        _write(tmp_path / "r.svm", RANK_TEXT), n_features=5, dense=False, query_id=True
    )
    assert sp.issparse(X) and X.shape == (5, 5)
    np.testing.assert_array_equal(qid, [1, 1, 1, 7, 7])


def test_svmlight_without_qid_gives_none(tmp_path):
    X, y, qid = load_dataset(_write(tmp_path / "d.svm", SVM_TEXT), query_id=True)
    assert qid is None
    np.testing.assert_array_equal(y, [1, 2, 3])
    assert X.shape == (3, 3)


def test_svmlight_qid_on_some_lines_only(tmp_path):
    path = _write(tmp_path / "mixed.svm", "1 qid:1 1:1\n0 1:2\n2 qid:2 1:3\n")
    with pytest.raises(ValueError, match=r"mixed\.svm: only 2 of 3 lines have a qid"):
        load_dataset(path, query_id=True)
    _, y = load_dataset(path)  # not asked for: qid tokens are ignored as before
    np.testing.assert_array_equal(y, [1, 0, 2])


def test_csv_query_id_is_none(tmp_path):
    X, y, qid = load_dataset(_write(tmp_path / "d.csv", "1,2,0\n3,4,1\n"), query_id=True)
    assert qid is None
    np.testing.assert_array_equal(y, [0, 1])
    assert X.shape == (2, 2)


def test_huge_svmlight_index_fails_fast(tmp_path):
    from maxmargin.datasets import load_dataset

    path = _write(tmp_path / "huge.svm", "1 1:0.5 3:1\n0 2:1 999999999:2\n1 1:0.3\n")
    with pytest.raises(ValueError, match="implausibly large"):
        load_dataset(path)


def test_labels_without_features_are_refused(tmp_path):
    path = _write(tmp_path / "labels.svm", "1\n0\n1\n")
    with pytest.raises(ValueError, match="no feature values"):
        load_dataset(path)
