"""A seeded order-k Markov token source with an exactly known entropy rate (numpy only, no torch).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.torch.markov).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

SOURCE_VERSION = "torchrun/markov/v1"


@dataclass(frozen=True)
class SourceSpec:
    """Parameters of a Markov source (all that defines it, with the seed)."""

    vocab: int = 32
    order: int = 2
    support: int = 4
    alpha: float = 0.5
    eps: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if self.vocab < 2 or self.order < 1 or not 1 <= self.support <= self.vocab:
            raise ValueError("need vocab >= 2, order >= 1, 1 <= support <= vocab")
        if self.vocab**self.order > 1 << 16:
            raise ValueError("vocab ** order must be <= 65536 contexts")
        if not 0 < self.eps <= 1 or not self.alpha > 0:
            raise ValueError("need 0 < eps <= 1 and alpha > 0")


class MarkovSource:
    """The source of a :class:`SourceSpec`: transition table, stationary law, entropy rate, sampling."""

    def __init__(self, spec: SourceSpec) -> None:
        self.spec = spec
        v, k = spec.vocab, spec.order
        n_ctx = v**k
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([0x4D41524B, spec.seed])))
        probs = np.full((n_ctx, v), spec.eps / v)
        for c in range(n_ctx):
            succ = rng.choice(v, size=spec.support, replace=False)
            probs[c, succ] += (1.0 - spec.eps) * rng.dirichlet(np.full(spec.support, spec.alpha))
        self.probs = probs / probs.sum(axis=1, keepdims=True)  # (contexts, vocab), rows sum to 1
        self.cdf = np.cumsum(self.probs, axis=1)
        self.cdf[:, -1] = 1.0

    # --- contexts: the integer c = sum_j x_{t-k+j} * v^(k-1-j) (oldest token most significant) ---
    def next_context(self, ctx: np.ndarray, token: np.ndarray) -> np.ndarray:
        """The context after emitting ``token`` in context ``ctx`` (vectorised)."""
        v, k = self.spec.vocab, self.spec.order
        return (ctx % (v ** (k - 1))) * v + token

    @cached_property
    def stationary(self) -> np.ndarray:
        """The stationary distribution over contexts (exact up to float64 linear algebra)."""
        v, k = self.spec.vocab, self.spec.order
        n = v**k
        # transition matrix over contexts: c -> next_context(c, x) with probability probs[c, x]
        T = np.zeros((n, n))
        ctx = np.repeat(np.arange(n), v)
        tok = np.tile(np.arange(v), n)
        np.add.at(T, (ctx, self.next_context(ctx, tok)), self.probs.reshape(-1))
        # solve pi (T - I) = 0 with sum(pi) = 1 (replace one equation by the normalisation)
        A = (T - np.eye(n)).T
        A[-1, :] = 1.0
        b = np.zeros(n)
        b[-1] = 1.0
        pi = np.linalg.solve(A, b)
        pi = np.clip(pi, 0.0, None)
        return pi / pi.sum()

    @cached_property
    def row_entropy(self) -> np.ndarray:
        """Entropy (nats) of each context's next-token distribution."""
        p = self.probs
        return -(p * np.log(p)).sum(axis=1)

    @cached_property
    def entropy_rate(self) -> float:
        """The source's entropy rate in nats/token: sum_c pi(c) H(P(.|c))."""
        return float(self.stationary @ self.row_entropy)

    def sample(self, chains: int, length: int, seed: int) -> np.ndarray:
        """``chains`` independent stationary chains of ``length`` tokens, shape (chains, length), int64.

        The first ``order`` tokens of a chain are its initial context drawn from ``pi``.
        """
        v, k = self.spec.vocab, self.spec.order
        if length < k + 1:
            raise ValueError(f"length must be > order ({k})")
        rng = np.random.Generator(np.random.Philox(key=[0x434F5250, int(seed) & (2**64 - 1)]))
        cdf_pi = np.cumsum(self.stationary)
        cdf_pi[-1] = 1.0
        ctx = np.searchsorted(cdf_pi, rng.random(chains), side="right").astype(np.int64)
        out = np.empty((chains, length), dtype=np.int64)
        for j in range(k):  # unpack the initial context into its tokens
            out[:, j] = (ctx // v ** (k - 1 - j)) % v
        u = rng.random((length - k, chains))
        for t in range(k, length):
            tok = (self.cdf[ctx] < u[t - k][:, None]).sum(axis=1)
            tok = np.minimum(tok, v - 1)
            out[:, t] = tok
            ctx = self.next_context(ctx, tok)
        return out

    def empirical_nll(self, tokens: np.ndarray) -> float:
        """Mean -log P(x_t | context) over every position t >= order of each chain (nats/token)."""
        v, k = self.spec.vocab, self.spec.order
        ctx = np.zeros(tokens.shape[0], dtype=np.int64)
        for j in range(k):
            ctx = ctx * v + tokens[:, j]
        total, count = 0.0, 0
        for t in range(k, tokens.shape[1]):
            total -= float(np.log(self.probs[ctx, tokens[:, t]]).sum())
            count += tokens.shape[0]
            ctx = self.next_context(ctx, tokens[:, t])
        return total / count


def corpus_sha256(spec: SourceSpec, corpus: np.ndarray, role: str, seed: int) -> str:
    """sha256 of the source parameters, the corpus role and seed, its shape and its tokens."""
    h = hashlib.sha256(SOURCE_VERSION.encode())
    h.update(
        json.dumps(
            {"source": asdict(spec), "role": role, "seed": int(seed), "shape": list(corpus.shape)}, sort_keys=True
        ).encode()
    )
    h.update(np.ascontiguousarray(corpus, dtype="<i8").tobytes())
    return h.hexdigest()


@dataclass
class Corpora:
    """The training and held-out corpora of a run and their identity."""

    source: MarkovSource
    train: np.ndarray
    heldout: np.ndarray
    train_seed: int
    heldout_seed: int

    def identity(self) -> dict[str, object]:
        """The data identity recorded with the run."""
        return {
            "source_version": SOURCE_VERSION,
            "source": asdict(self.source.spec),
            "entropy_rate_nats": self.source.entropy_rate,
            "train": {
                "seed": self.train_seed,
                "shape": list(self.train.shape),
                "sha256": corpus_sha256(self.source.spec, self.train, "train", self.train_seed),
            },
            "heldout": {
                "seed": self.heldout_seed,
                "shape": list(self.heldout.shape),
                "sha256": corpus_sha256(self.source.spec, self.heldout, "heldout", self.heldout_seed),
            },
        }


def make_corpora(
    spec: SourceSpec, data_seed: int, train_chains: int, train_length: int, heldout_chains: int, heldout_length: int
) -> Corpora:
    """Training corpus from one seed, held-out corpus from another (both derived from ``data_seed``)."""
    source = MarkovSource(spec)
    train_seed = (int(data_seed) * 2 + 0) & (2**63 - 1)
    heldout_seed = (int(data_seed) * 2 + 1) & (2**63 - 1)
    return Corpora(
        source,
        source.sample(train_chains, train_length, train_seed),
        source.sample(heldout_chains, heldout_length, heldout_seed),
        train_seed,
        heldout_seed,
    )
