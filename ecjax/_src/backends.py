"""Which kind of machine runs the programs: the one switch between a CPU's choices and an accelerator's.

Some choices differ by backend and change no number: the sampler's loop (a work queue on a CPU, rounds on an
accelerator, the same draws), a block of per-draw decisions as one program or step by step, the size of a slab of
decisions, the bound of the command line's compilation cache.  They all ask :func:`on_accelerator`.
"""

from __future__ import annotations

import jax


def on_accelerator(backend: str | None = None) -> bool:
    """Whether ``backend`` (default: JAX's default backend) is an accelerator (a GPU, a TPU), not the CPU."""
    return (jax.default_backend() if backend is None else backend) != "cpu"
