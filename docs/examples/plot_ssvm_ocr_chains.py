"""
Structured SVM on OCR-like letter chains
========================================

A chain-structured output: each example is a word, a sequence of letter images, and the
model scores a labelling by per-letter features plus letter-to-letter transitions;
prediction is Viterbi decoding.  :class:`~maxmargin.StructSVM` with a
:class:`~maxmargin.ChainTask` learns both by the 1-slack cutting-plane method, and is
compared with independent per-letter classification (no transitions).

Data: made here.  Five letters drawn as 8 x 8 glyphs, corrupted by flipping pixels, and
words drawn from a Markov chain over letters (like the OCR data set of Taskar et al., in
miniature).
"""

import matplotlib.pyplot as plt
import numpy as np

from maxmargin import ChainTask, StructSVM

rng = np.random.default_rng(0)
n_letters, side = 5, 8
glyphs = rng.random((n_letters, side * side)) < 0.35  # one binary glyph per letter
# a sticky, structured transition matrix: letter k is usually followed by k + 1
trans = np.full((n_letters, n_letters), 0.05)
for k in range(n_letters):
    trans[k, (k + 1) % n_letters] = 0.8
trans /= trans.sum(axis=1, keepdims=True)


def make_words(n, flip=0.3):
    X, Y = [], []
    for _ in range(n):
        T = int(rng.integers(3, 9))
        s = [int(rng.integers(n_letters))]
        for _ in range(T - 1):
            s.append(int(rng.choice(n_letters, p=trans[s[-1]])))
        s = np.array(s)
        noise = rng.random((T, side * side)) < flip
        X.append(np.logical_xor(glyphs[s], noise).astype(float))
        Y.append(s)
    return X, Y


X_train, y_train = make_words(150)
X_test, y_test = make_words(150)

# %%
# Chain SSVM versus per-letter SSVM
# ---------------------------------
chain = StructSVM(task=ChainTask(), C=10.0, max_iter=200, random_state=0).fit(X_train, y_train)
# the same model without transitions: every letter on its own
flat = StructSVM(task=ChainTask(), C=10.0, max_iter=200, random_state=0).fit(
    [x[i : i + 1] for x in X_train for i in range(len(x))],
    [y[i : i + 1] for y in y_train for i in range(len(y))],
)


def letter_error(model):
    pred = model.predict(X_test)
    return np.mean(np.concatenate([p != t for p, t in zip(pred, y_test)]))


print(f"letter error, chain model:      {letter_error(chain):.3f}")
print(f"letter error, letters one by one: {letter_error(flat):.3f}")

# %%
# A test word: the glyphs and both decodings
# ------------------------------------------
x, t = X_test[0], y_test[0]
fig, axes = plt.subplots(1, len(t), figsize=(1.3 * len(t), 1.9))
pc, pf = chain.predict([x])[0], flat.predict([x])[0]
for i, ax in enumerate(np.atleast_1d(axes)):
    ax.imshow(x[i].reshape(side, side), cmap="gray_r")
    ax.set_title(f"true {t[i]}\nchain {pc[i]} / flat {pf[i]}", fontsize=8)
    ax.axis("off")
fig.tight_layout()

# %%
# Convergence of the cutting-plane solver
# ---------------------------------------
fig, ax = plt.subplots(figsize=(6, 3))
ax.semilogy([max(h["gap"], 1e-8) for h in chain.history_])
ax.set_xlabel("cutting-plane iteration")
ax.set_ylabel("duality gap")
fig.tight_layout()
