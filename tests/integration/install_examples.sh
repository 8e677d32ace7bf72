#!/usr/bin/env bash
# The installed library (docs/library.md): `cmake --install` of the build directory into a
# scratch prefix installs libsgfabric (shared and static), the headers under include/sgfabric/,
# sgfabric.pc and the CMake package; the examples/ programs then build out of tree against it,
# with pkg-config (examples/Makefile) and with CMake's find_package (examples/CMakeLists.txt),
# and run:
#  - the C program's 8-to-1 incast on ib, roce and ideal delivers 8 transfers; ideal is no slower
#    than ib, and roce counts PFC pause frames at packet fidelity;
#  - the static build gives the same output as the shared one; the C++ program the same as C;
#  - a program that initialises a plugin after loading the platform is stopped with a message
#    naming the call (SimGrid's plugin convention), and a bad platform is an error, not a crash;
#  - the installed sgfabric runs compare with the analysis scripts installed beside it.
# Called as: install_examples.sh SGFABRIC_BINARY SOURCE_DIR BUILD_DIR
set -euo pipefail
. "$(dirname "$0")/common.sh"
BUILD=${1:?usage: install_examples.sh SGFABRIC SOURCE_DIR BUILD_DIR}
PREFIX=$WORK/prefix

cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; die "cmake --install failed"; }
for f in include/sgfabric/sgfabric.h include/sgfabric/sg_fabric.h include/sgfabric/ib.h include/sgfabric/roce.h \
    lib/libsgfabric.a lib/libsgfabric.so lib/pkgconfig/sgfabric.pc lib/cmake/sgfabric/sgfabricConfig.cmake bin/sgfabric; do
  [ -e "$PREFIX/$f" ] || die "not installed: $f"
done
# The shared library exports its headers' names only (cmake/sgfabric.map): no cli_*, pfc_*, ...
leaked=$(nm -D --defined-only "$PREFIX/lib/libsgfabric.so" | awk '{print $3}' |
  grep -vE '^(sg_|sgf_|fab_|fabric_|ib_|roce_|topo_|param_|heap_|rng_|route_|unit_|flow_engine_|pkt_engine_|SGFABRIC_0)' || true)
[ -z "$leaked" ] || die "libsgfabric.so exports names outside its headers' prefixes: $(echo $leaked | head -c 300)"
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
pkg-config --exists sgfabric || die "pkg-config does not find sgfabric"
export LD_LIBRARY_PATH=$PREFIX/lib

# pkg-config build (copies: the source tree is never written).
cp -r "$SRC/examples" "$WORK/ex-make"
make -s -C "$WORK/ex-make" >"$WORK/make.log" 2>&1 || { cat "$WORK/make.log" >&2; die "examples: make with pkg-config failed"; }
# CMake find_package build.
cmake -S "$SRC/examples" -B "$WORK/ex-cmake" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/cmake.log" 2>&1 &&
  cmake --build "$WORK/ex-cmake" >>"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log" >&2; die "examples: CMake find_package build failed"; }

"$PREFIX/bin/sgfabric" platform --gpus 16 --radix 8 -o "$WORK/cluster.xml" >/dev/null
done_at() { sed -n 's/^incast done at \([0-9.e+-]*\) s.*/\1/p' "$1"; }
for fabric in ib roce ideal; do
  "$WORK/ex-make/incast_c" "$WORK/cluster.xml" $fabric >"$WORK/$fabric.out" 2>"$WORK/$fabric.err" ||
    { cat "$WORK/$fabric.err" >&2; die "incast_c on $fabric failed"; }
  n=$(grep -c "bytes delivered at" "$WORK/$fabric.out" || true)
  [ "$n" -eq 8 ] || die "incast_c on $fabric: $n transfers delivered, expected 8"
  [ -n "$(done_at "$WORK/$fabric.out")" ] || die "incast_c on $fabric printed no completion"
  "$WORK/ex-cmake/incast_c_static" "$WORK/cluster.xml" $fabric >"$WORK/$fabric.static.out" 2>&1 ||
    die "incast_c_static on $fabric failed"
  cmp -s "$WORK/$fabric.out" "$WORK/$fabric.static.out" || die "the static and shared builds differ on $fabric"
  "$WORK/ex-cmake/incast_cpp" "$WORK/cluster.xml" $fabric >"$WORK/$fabric.cpp.out" 2>&1 || die "incast_cpp on $fabric failed"
  [ "$(done_at "$WORK/$fabric.cpp.out")" = "$(done_at "$WORK/$fabric.out")" ] || die "C++ and C examples differ on $fabric"
done
cat "$WORK/ib.out" "$WORK/roce.out"
python3 - "$(done_at "$WORK/ideal.out")" "$(done_at "$WORK/ib.out")" "$(done_at "$WORK/roce.out")" <<'PY' || die "completion order (above)"
import sys
ideal, ib, roce = map(float, sys.argv[1:])
# 8 x 16 MiB through one 400 Gb/s port: at least 2.68 ms on any fabric.
assert 8 * 16 * 2**20 / 50e9 <= ideal <= ib, (ideal, ib)
assert ideal <= roce, (ideal, roce)
print("incast: ideal %.6f s, ib %.6f s, roce %.6f s" % (ideal, ib, roce))
PY
grep -Eq "roce: [1-9][0-9]* PFC pause frames" "$WORK/roce.out" || die "roce counted no PFC pause frame in an 8-to-1 incast"
grep -Eq "at GPU 8's NIC" "$WORK/ib.out" || die "ib printed no per-port credit stall"
# The link-handle getters read the port the index getters read.
python3 - "$WORK/ib.out" "$WORK/roce.out" <<'PY' || die "the getters on SimGrid's link handles (above)"
import re, sys
ib, roce = open(sys.argv[1]).read(), open(sys.argv[2]).read()
m = re.search(r"([0-9.]+) s at GPU 8's NIC \(port (-?[0-9]+)\), ([0-9.-]+) s by its link", ib)
assert m and int(m.group(2)) >= 0 and m.group(1) == m.group(3), ib
r = re.search(r"GPU 8's NIC paused ([0-9.-]+) s by (-?[0-9]+) PAUSE frames", roce)
assert r and float(r.group(1)) >= 0 and int(r.group(2)) >= 0, roce
print("link getters: ib stall %s s (port %s), roce paused %s s by %s PAUSE frames" % (m.group(1), m.group(2), r.group(1), r.group(2)))
PY

# The plugin convention: init before the platform; a late init stops the program with a reason.
cat >"$WORK/late.c" <<'C'
#include <sgfabric.h>
#include <simgrid/engine.h>
#include <stdio.h>
int main(int argc, char *argv[])
{
  simgrid_init(&argc, argv);
  char err[512];
  if (sgf_load_platform(argv[1], NULL, err, sizeof err) == NULL) {
    fprintf(stderr, "load: %s\n", err);
    return 1;
  }
  sg_ib_plugin_init(); /* too late */
  return 0;
}
C
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -std=c11 -o "$WORK/late" "$WORK/late.c" $(pkg-config --cflags --libs sgfabric) || die "late.c does not build"
status=0
"$WORK/late" "$WORK/cluster.xml" >"$WORK/late.out" 2>"$WORK/late.err" || status=$?
[ "$status" -ne 0 ] || die "a plugin init after the platform was loaded was accepted"
grep -q "sg_ib_plugin_init: called after the platform was loaded" "$WORK/late.err" ||
  { cat "$WORK/late.err" >&2; die "the late init's message does not name the call"; }
printf '<platform version="4.1">\n<zone id="z" routing="None">\n' >"$WORK/bad.xml"
status=0
"$WORK/late" "$WORK/bad.xml" >"$WORK/bad.out" 2>"$WORK/bad.err" || status=$?
[ "$status" -eq 1 ] || die "a malformed platform: exit $status, expected 1"
grep -q "bad.xml" "$WORK/bad.err" || { cat "$WORK/bad.err" >&2; die "the loader's error does not name the file"; }
# The installed sgfabric finds its analysis scripts next to itself (PREFIX/share/sgfabric/analysis).
[ -f "$PREFIX/share/sgfabric/analysis/plot_compare.py" ] || die "the analysis scripts are not installed"
[ -f "$PREFIX/share/sgfabric/analysis/sweep/Snakefile" ] || die "the sweep workflow is not installed"
(cd "$WORK" && "$PREFIX/bin/sgfabric" compare --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 4 \
  --fabrics ib --out installed-compare >/dev/null 2>"$WORK/installed.err") ||
  { cat "$WORK/installed.err" >&2; die "the installed sgfabric compare failed"; }
if python3 -c 'import matplotlib' 2>/dev/null; then
  [ -s "$WORK/installed-compare/compare.png" ] || die "the installed compare drew no chart"
fi
echo "install and examples: ok"
