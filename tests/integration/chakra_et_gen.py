#!/usr/bin/env python3
"""Writes small Chakra execution traces (PREFIX.0.et .. PREFIX.N-1.et) for the integration tests.

The protobuf encoding is written by hand with the standard library (no protobuf package): field
numbers and enum values are those of the Chakra schema (MLCommons Chakra,
schema/protobuf/et_def.proto), and each message is preceded by its length as a varint, the framing
Chakra's tools write. Usage:

  chakra_et_gen.py PREFIX [--ranks N] [--roofline] [--reverse] [--ag-size BYTES]
                   [--variant basic|barrier|mismatch|cycle|host|baddep|solo]

The basic trace (N = 4 or 8, even) is a tp x dp layout with tp = 2: per rank
  n0 COMP 100 us
  n1 COMM_COLL ALL_REDUCE 1 MiB on the rank's tp process group          (after n0)
  n2 COMP num_ops/tensor_size, no duration: the roofline (--roofline only) (after n1)
  n3 COMM_COLL ALL_GATHER 4 MiB (--ag-size) on the rank's dp process group          (after n1, n2)
  n4 COMP (250 + 10 * rank) us, independent of n3: overlaps it          (after n1, n2)
  n5 COMM_SEND to rank+1 (even ranks) / COMM_RECV from rank-1 (odd), 64 KiB, comm_tag 7 (after n4)
  n6 METADATA (no op: passes its dependencies on)                       (after n3, n5)
  n7 COMP 50 us                                                         (after n6: waits for n3)
  n8 COMM_COLL ALL_REDUCE 256 KiB, no pg_name: every rank               (after n7)
  (--variant solo: n0, then an all-reduce on a process group of the rank alone, no messages)
  n9 (--variant host) COMM_COLL is_cpu_op, no comm_type/comm_size, 20 us, ctrl_deps on a missing id
so a rank's recorded compute is 400 + 10 * rank us.
"""
import argparse
import sys

# Chakra schema enum values (et_def.proto).
METADATA_NODE, COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 1, 4, 5, 6, 7
ALL_REDUCE, ALL_GATHER, BARRIER = 0, 2, 9


def varint(n):
    if n < 0:
        n += 1 << 64  # protobuf: negative int64 as its 64-bit two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(0x80 | b)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


def attr(name, value, kind):
    """AttributeProto: name = 1; int32_val = 7, int64_val = 9, uint64_val = 13, bool_val = 27,
    string_val = 29."""
    field = {"int32": 7, "int64": 9, "uint64": 13, "bool": 27, "string": 29}[kind]
    body = f_bytes(1, name)
    body += f_bytes(field, value) if kind == "string" else f_varint(field, int(value))
    return body


def node(nid, name, ntype, data_deps=(), ctrl_deps=(), duration=0, attrs=()):
    """Node: id = 1, name = 2, type = 3, ctrl_deps = 4, data_deps = 5 (packed, as proto3 writes
    repeated scalars), duration_micros = 7, attr = 10."""
    body = f_varint(1, nid) + f_bytes(2, name) + f_varint(3, ntype)
    if ctrl_deps:
        body += f_bytes(4, b"".join(varint(d) for d in ctrl_deps))
    if data_deps:
        body += f_bytes(5, b"".join(varint(d) for d in data_deps))
    if duration:
        body += f_varint(7, duration)
    for a in attrs:
        body += f_bytes(10, a)
    return body


def metadata(version="0.0.4"):
    return f_bytes(1, version)  # GlobalMetadata: version = 1


def coll(nid, name, comm_type, size, pg, deps):
    attrs = [attr("is_cpu_op", 0, "bool"), attr("comm_type", comm_type, "int64"),
             attr("comm_size", size, "int64")]
    if pg is not None:
        attrs.append(attr("pg_name", pg, "string"))
    return node(nid, name, COMM_COLL_NODE, data_deps=deps, attrs=attrs)


def rank_nodes(rank, tp, roofline, variant, ag_size):
    tp_pg = "tp%d" % (rank // tp)           # ranks with the same rank // tp
    dp_pg = "dp%d" % (rank % tp)            # ranks with the same rank % tp
    out = [node(0, "fwd", COMP_NODE, duration=100, attrs=[attr("is_cpu_op", 0, "bool")])]
    if variant == "solo":  # one process group per rank, no messages
        return out + [coll(1, "allreduce_self", ALL_REDUCE, 1 << 20, "solo%d" % rank, [0])]
    ar_type = BARRIER if variant == "barrier" else ALL_REDUCE
    ar_size = 1 << 20
    if variant == "mismatch" and rank == 1:
        ar_size = 1 << 19
    out.append(coll(1, "allreduce_tp", ar_type, ar_size, tp_pg, [0]))
    deps = [1]
    if roofline:
        out.append(node(2, "gemm", COMP_NODE, data_deps=[1],
                        attrs=[attr("num_ops", 2 * 10**12, "int64"), attr("tensor_size", 10**9, "uint64")]))
        deps = [1, 2]
    out.append(coll(3, "allgather_dp", ALL_GATHER, ag_size, dp_pg, deps))
    out.append(node(4, "bwd", COMP_NODE, data_deps=deps, duration=250 + 10 * rank))
    if rank % 2 == 0:
        out.append(node(5, "send", COMM_SEND_NODE, data_deps=[4],
                        attrs=[attr("comm_src", rank, "int32"), attr("comm_dst", rank + 1, "int32"),
                               attr("comm_size", 64 << 10, "int64"), attr("comm_tag", 7, "int32")]))
    else:
        out.append(node(5, "recv", COMM_RECV_NODE, data_deps=[4],
                        attrs=[attr("comm_src", rank - 1, "int32"), attr("comm_dst", rank, "int32"),
                               attr("comm_size", 64 << 10, "int64"), attr("comm_tag", 7, "int32")]))
    out.append(node(6, "join", METADATA_NODE, data_deps=[3], ctrl_deps=[5]))
    cycle = [8] if variant == "cycle" else []
    opt_deps = [6, 999] if variant == "baddep" else [6]
    out.append(node(7, "opt", COMP_NODE, data_deps=opt_deps, ctrl_deps=cycle, duration=50))
    out.append(coll(8, "allreduce_world", ALL_REDUCE, 256 << 10, None, [7]))
    if variant == "host":
        # What an unlinked PyTorch host trace holds: the CPU-side call of a collective (no
        # comm_type, no comm_size) with a control dependency on a parent the conversion dropped.
        out.append(node(9, "c10d::allreduce_", COMM_COLL_NODE, data_deps=[7], ctrl_deps=[999], duration=20,
                        attrs=[attr("is_cpu_op", 1, "bool")]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--roofline", action="store_true")
    ap.add_argument("--reverse", action="store_true",
                    help="write each rank's nodes in reverse order (every node before its dependencies)")
    ap.add_argument("--ag-size", type=int, default=4 << 20, help="bytes of the dp all-gather (n3)")
    ap.add_argument("--variant", default="basic", choices=["basic",
                    "barrier", "mismatch", "cycle", "host", "baddep", "solo"])
    a = ap.parse_args()
    if a.ranks < 2 or a.ranks % 2:
        sys.exit("--ranks must be even and at least 2")
    for rank in range(a.ranks):
        with open("%s.%d.et" % (a.prefix, rank), "wb") as f:
            nodes = rank_nodes(rank, 2, a.roofline, a.variant, a.ag_size)
            if a.reverse:
                nodes.reverse()
            for msg in [metadata()] + nodes:
                f.write(varint(len(msg)) + msg)


if __name__ == "__main__":
    main()
