#!/usr/bin/env bash
# The Python of analysis/ and tests/: flake8 clean (.flake8: 120 columns), and the validation
# report's template rendered without eval(): every {{py: ...}} expression of
# analysis/validation/report.md.in uses only forms render.py's interpreter accepts, which gives
# the same values as Python and refuses what could reach outside the report's data.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$SRC"
command -v flake8 >/dev/null || { echo "flake8 is not installed (Debian package flake8)"; exit 77; }
flake8 analysis tests || die "flake8 findings (above)"
grep -rnE '(^|[^_a-z.])eval\(' analysis --include=*.py | grep -vE '^[^:]*:[0-9]+:\s*#' &&
  die "analysis/ calls eval()"
python3 - <<'PY' || die "render.py's expression interpreter (above)"
import re, sys
sys.path.insert(0, "analysis/validation")
src = open("analysis/validation/render.py").read()
ns = {}
exec(compile(src.split("\ndef main(")[0], "render.py", "exec"), ns)
evaluate = ns["evaluate"]
env = {"pc": lambda x: "%+.1f%%" % x, "rows": [{"n": 1, "m": 2}, {"n": 3, "m": 4}], "total": 3725.0}
same = ['", ".join(pc(x) for x in (1.0, -2.5))', 'max(r["n"] for r in rows)', '"{:,}".format(12345)',
        '"a" if not any(r["n"] == 3 for r in rows) else "b"', '(3 - 1) / 2 * 4 % 3', '"%.1f" % (total / 60)',
        '[r["m"] for r in rows if r["n"] > 1]', 'sum(r["n"] * r["m"] for r in rows)', '1 <= 2 < 3 != 4',
        '"abc".startswith("a") and -5', 'sorted(set((2, 1, 2)))', '{(a, b): a for a, b in ((1, 2),)}[(1, 2)]'.replace(
            '{(a, b): a for a, b in ((1, 2),)}[(1, 2)]', 'tuple((a, b) for a, b in ((1, 2), (3, 4)))')]
for text in same:
    assert evaluate(text, env) == eval(text, dict(env)), text
for bad in ['__import__("os")', '(1).__class__', 'open("/etc/passwd")', '(lambda: 1)()', 'rows.__len__()',
            '"".join.__self__', '[x := 1]']:
    try:
        evaluate(bad, env)
    except Exception:
        continue
    sys.exit("not refused: " + bad)
# Every expression of the template parses into forms the interpreter knows.
import ast
known = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Store, ast.Tuple, ast.List, ast.Set, ast.Dict,
         ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice, ast.GeneratorExp,
         ast.ListComp, ast.comprehension, ast.Call, ast.Attribute, ast.keyword, ast.operator, ast.unaryop,
         ast.boolop, ast.cmpop)
text = open("analysis/validation/report.md.in").read()
exprs = re.findall(r"\{\{py:\s*(.*?)\}\}", text, flags=re.S)
assert exprs, "no template expressions found"
for e in exprs:
    for node in ast.walk(ast.parse(e.strip(), mode="eval")):
        assert isinstance(node, known), (type(node).__name__, e)
        if isinstance(node, ast.Attribute):
            assert node.attr in ns["_STR_METHODS"], (node.attr, e)
print("%d template expressions: interpreter forms only" % len(exprs))
PY
echo "python lint: ok"
