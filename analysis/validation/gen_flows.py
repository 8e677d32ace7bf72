#!/usr/bin/env python3
"""Writes the flow files (src,dst,bytes,start_us) of the flow-vs-packet scenario matrix.

usage: gen_flows.py PATTERN N GPUS_PER_NODE BYTES SEED OUT
  incast    every GPU of the last min(N/2, 64) GPUs that are not in node 0 sends BYTES to gpu0
            (one sender per node and rail, so the bottleneck is the receiver's NIC link)
  perm      random permutation without fixed points (derangement), seeded; intra-node pairs
            are kept (they use NVLink)
  perm-x    random permutation where every destination is in another node (fabric only)
  a2a       every GPU sends BYTES to every other GPU
  a2a-rail  every GPU sends BYTES to every other GPU of its rail (i % G), i.e. the
            fabric part of a PXN-style all-to-all
  ring      ring all-reduce traffic: every GPU sends 2(N-1)/N x BYTES to its successor in its
            rail ring, (i + G) mod N (rings of N/G GPUs, one per rail); with N/G = n the
            per-GPU volume is 2(n-1)/n x BYTES
All flows start at t = 0. Deterministic for a given SEED (Python's random.Random(SEED)).
"""
import random
import sys


def main():
    pattern, n, g, size, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(float(sys.argv[4])), int(sys.argv[5]), sys.argv[6]
    rng = random.Random(seed)
    rows = []
    if pattern == "incast":
        k = min(n // 2, 64)
        senders = list(range(n - 1, g - 1, -1))[:k]
        rows = [(s, 0, size) for s in senders]
    elif pattern in ("perm", "perm-x"):
        while True:
            p = list(range(n))
            rng.shuffle(p)
            if pattern == "perm" and all(p[i] != i for i in range(n)):
                break
            if pattern == "perm-x" and all(p[i] // g != i // g for i in range(n)):
                break
        rows = [(i, p[i], size) for i in range(n)]
    elif pattern == "a2a":
        rows = [(i, j, size) for i in range(n) for j in range(n) if i != j]
    elif pattern == "a2a-rail":
        rows = [(i, j, size) for i in range(n) for j in range(n)
                if i != j and i % g == j % g]
    elif pattern == "ring":
        m = n // g
        vol = int(2 * (m - 1) / m * size)
        rows = [(i, (i + g) % n, vol) for i in range(n)]
    else:
        sys.exit("unknown pattern " + pattern)
    with open(out, "w") as f:
        f.write("src,dst,bytes,start_us\n")
        for s, d, b in rows:
            f.write("%d,%d,%d,0\n" % (s, d, b))


if __name__ == "__main__":
    main()
