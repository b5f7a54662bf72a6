#!/usr/bin/env python3
"""Run cases of the public ANSI Common Lisp test suite through SBCL and
through `sexpgpu eval -e FORM --readably`, and compare the printed values.

The suite itself is not part of this repository: pass the directory that
holds its .lsp files (searched recursively).  See tests/ansi/README.md.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PRELUDE = os.path.join(HERE, "prelude.lisp")

# Operators whose cases are run by default: the ones language.md lists.
# A case belongs to an operator by its test name's prefix (`car.1` -> car;
# `loop12.3` -> loop; `format.a.1` -> format).
DEFAULT_OPS = """
quote function lambda if progn let let* setq flet labels macrolet
symbol-macrolet block return-from tagbody go catch throw unwind-protect
multiple-value-call multiple-value-prog1 the locally eval-when declare
defun defmacro defvar defparameter defconstant psetq psetf setf rotatef
apply funcall values complement constantly identity incf decf push pop pushnew
when unless cond case ecase typecase etypecase and or not dotimes dolist do do*
loop prog1 prog2 return multiple-value-bind multiple-value-list
multiple-value-setq nth-value values-list destructuring-bind
macroexpand macroexpand-1 gensym gentemp symbol-name symbol-value
symbol-function symbol-plist get intern make-symbol keywordp boundp fboundp
+ - * / 1+ 1- = /= < > <= >= min max abs floor ceiling truncate round ffloor
fceiling ftruncate fround mod rem expt sqrt exp log sin cos tan asin acos atan
sinh cosh tanh signum gcd lcm isqrt zerop plusp minusp evenp oddp numberp
integerp floatp realp float coerce parse-integer random
cons car cdr caar cadr cdar cddr caaar caadr cadar caddr cdaar cdadr cddar
cdddr cxr first second third fourth fifth sixth seventh eighth ninth tenth
rest nth nthcdr last butlast list list* append revappend reverse nreverse
length member member-if assoc assoc-if rassoc acons pairlis getf remf mapcar
mapc mapcan maplist mapl mapcon copy-list copy-tree subst sublis tree-equal
endp listp consp atom null adjoin union intersection set-difference
remove-duplicates
elt subseq sort stable-sort find find-if find-if-not position position-if
count count-if remove remove-if remove-if-not delete delete-if substitute
substitute-if reduce some every notany notevery map concatenate fill replace
search mismatch copy-seq
vector make-array aref svref vector-push vector-push-extend array-dimensions
array-dimension array-rank array-total-size
string string= string/= string< string> string<= string>= string-equal
string-upcase string-downcase string-capitalize string-trim string-left-trim
string-right-trim char schar char-code code-char char-upcase char-downcase
char= char/= char< char> char<= char>= alpha-char-p digit-char-p
upper-case-p lower-case-p format princ-to-string prin1-to-string
write-to-string
make-hash-table gethash remhash clrhash maphash hash-table-count hash-table-p
eq eql equal equalp typep type-of check-type assert error warn cerror
ignore-errors handler-case documentation
""".split()

# --- skip rules --------------------------------------------------------------
# Each names what language.md excludes ("Deliberate differences" and the
# lists of what is provided); a case is skipped when its form mentions one.
SKIP_SYMBOLS = {
    "packages": """find-package make-package in-package defpackage
        symbol-package package-name find-symbol export import use-package
        unuse-package delete-package shadow shadowing-import list-all-packages
        do-symbols do-external-symbols do-all-symbols *package* packagep
        with-package-iterator package-use-list rename-package unexport""",
    "CLOS/structures": """defclass defgeneric defmethod make-instance class-of
        find-class slot-value defstruct change-class call-next-method
        print-object class-name slot-boundp with-slots with-accessors
        make-load-form defstruct* standard-object structure-object
        define-method-combination ensure-generic-function""",
    "streams": """with-output-to-string with-input-from-string
        make-string-output-stream make-string-input-stream
        get-output-stream-string *standard-output* *standard-input*
        *error-output* *terminal-io* *query-io* *trace-output* write-char
        write-string write-line read-char read-line peek-char unread-char
        write-byte read-byte open close with-open-file make-broadcast-stream
        make-concatenated-stream make-echo-stream make-synonym-stream
        make-two-way-stream streamp finish-output force-output clear-output
        fresh-line pprint pprint-logical-block formatter write-sequence""",
    "reader/eval/compile": """read-from-string read read-preserving-whitespace
        readtable *readtable* copy-readtable set-macro-character
        set-dispatch-macro-character *read-base* *read-eval* compile
        compile-file load eval with-standard-io-syntax *read-suppress*""",
    "ratios/bignums/complexes": """rational rationalize numerator denominator
        complex realpart imagpart cis phase conjugate rationalp complexp ratio
        bignum""",
    "float formats (every float is a double)": """single-float short-float
        long-float most-positive-single-float most-negative-single-float
        least-positive-single-float single-float-epsilon short-float-epsilon
        long-float-epsilon most-positive-short-float most-positive-long-float
        least-positive-short-float least-positive-long-float
        decode-float integer-decode-float scale-float float-radix
        float-digits float-precision float-sign""",
    "restarts/condition system": """restart-case invoke-restart find-restart
        compute-restarts with-simple-restart continue abort muffle-warning
        use-value store-value handler-bind signal define-condition
        make-condition *debugger-hook* *break-on-signals* restart-bind
        ccase ctypecase invoke-debugger break with-condition-restarts
        type-error-datum type-error-expected-type cell-error-name
        simple-condition-format-control simple-condition-format-arguments""",
    "multi-dimensional/special arrays": """array-row-major-index row-major-aref
        adjust-array adjustable-array-p array-displacement array-in-bounds-p
        bit sbit bit-vector-p simple-bit-vector-p bit-and bit-ior bit-xor
        bit-not array-element-type upgraded-array-element-type
        :displaced-to :displaced-index-offset""",
    "not provided (language.md)": """with-hash-table-iterator
        hash-table-rehash-size hash-table-rehash-threshold hash-table-size
        sxhash get-universal-time get-decoded-time get-internal-real-time
        random-state make-random-state *random-state* progv
        special-operator-p compiler-macro-function define-compiler-macro
        define-setf-expander defsetf get-setf-expansion
        define-modify-macro define-symbol-macro *macroexpand-hook*
        *print-pretty* *print-circle* *print-level* *print-length*
        *print-base* *print-radix* *print-escape* *print-readably*
        *print-case* *print-array* *print-lines* *print-right-margin*
        copy-pprint-dispatch set-pprint-dispatch pprint-dispatch
        *print-pprint-dispatch* *print-miser-width* *print-gensym*
        function-lambda-expression fdefinition macro-function
        lambda-list-keywords call-arguments-limit
        lambda-parameters-limit multiple-values-limit""",
}
SKIP_TEXT = [  # (category, regex over the form text)
    ("ratios/bignums/complexes", re.compile(r"(?<![\w.])[-+]?\d+/\d+(?![\w/])|#c\(", re.I)),
    ("multi-dimensional/special arrays", re.compile(r"#\d*a|#\*", re.I)),
    ("float formats (every float is a double)",
     re.compile(r"(?<![\w*])[-+]?\d+(\.\d*)?[fsl][-+]?\d+(?![\w])", re.I)),
    ("packages", re.compile(r"[\w-]::?[\w*+-]")),
    ("reader/eval/compile", re.compile(r"#\.|#[+-]|#p\"", re.I)),
    # a fixnum limit stepped past: a bignum in CL, E-OVERFLOW here
    ("ratios/bignums/complexes",
     re.compile(r"\((1\+|\+|\*)\s+most-positive-fixnum\b|\((1-|-|\*)\s+most-negative-fixnum\b",
                re.I)),
]
BIGNUM_LIMIT = 2 ** 63


# --- a small reader: split top-level forms and their sub-forms as text -------
def skip_ws(s, i):
    n = len(s)
    while i < n:
        c = s[i]
        if c in " \t\r\n\f":
            i += 1
        elif c == ";":
            while i < n and s[i] != "\n":
                i += 1
        elif s.startswith("#|", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if s.startswith("|#", i):
                    depth, i = depth - 1, i + 2
                elif s.startswith("#|", i):
                    depth, i = depth + 1, i + 2
                else:
                    i += 1
        else:
            break
    return i


def read_form(s, i):
    """Return the end index of the form starting at s[i] (after whitespace)."""
    n = len(s)
    c = s[i]
    if c == "(":
        i += 1
        while True:
            i = skip_ws(s, i)
            if i >= n:
                raise ValueError("eof in list")
            if s[i] == ")":
                return i + 1
            i = read_form(s, i)
    if c == ")":
        raise ValueError("unexpected )")
    if c in "'`":
        return read_form(s, skip_ws(s, i + 1))
    if c == ",":
        i += 1
        if i < n and s[i] in "@.":
            i += 1
        return read_form(s, skip_ws(s, i))
    if c == '"':
        i += 1
        while s[i] != '"':
            i += 2 if s[i] == "\\" else 1
        return i + 1
    if c == "#":
        d = s[i + 1]
        if d == "\\":
            j = i + 3
            while j < n and (s[j].isalnum() or s[j] in "-_") and s[i + 2].isalnum():
                j += 1
            return j
        if d in "'(":
            return read_form(s, i + 1)
        if d in "+-":
            j = read_form(s, skip_ws(s, i + 2))
            return read_form(s, skip_ws(s, j))
        if d == ".":
            return read_form(s, i + 2)
        j = i + 1
        while j < n and s[j].isdigit():
            j += 1
        if s[j] in "aA" and s[j + 1] == "(":
            return read_form(s, j + 1)
        if s[j] in "cCpP":
            return read_form(s, j + 1)
        # #x #b #o #* #: and the like: a token
    j = i
    while j < n and s[j] not in " \t\r\n\f()\";'`":
        if s[j] == "|":
            j = s.index("|", j + 1) + 1
        elif s[j] == "\\":
            j += 2
        else:
            j += 1
    return j


def subforms(s):
    """Split the text of a list into the texts of its elements."""
    assert s[0] == "("
    out, i = [], 1
    while True:
        i = skip_ws(s, i)
        if s[i] == ")":
            return out
        j = read_form(s, i)
        out.append(s[i:j])
        i = j


def toplevel_forms(text):
    i, out = 0, []
    while True:
        i = skip_ws(text, i)
        if i >= len(text):
            return out
        j = read_form(text, i)
        out.append(text[i:j])
        i = j


TOKEN_RE = re.compile(r"[^\s()\"'`,;#|]+")


def symbols_of(form):
    # drop strings and characters before collecting tokens
    t = re.sub(r'"(\\.|[^"\\])*"', " ", form)
    t = re.sub(r"#\\.[\w-]*", " ", t)
    return {tok.lower() for tok in TOKEN_RE.findall(t)}


KNOWN_OPS = set(DEFAULT_OPS)


# The suite names the tests of + - * by words (plus.1, minus.3, subtract.1, times.2).
OP_ALIASES = {"plus": "+", "minus": "-", "subtract": "-", "times": "*"}


def operator_of(name):
    op = name.lower().split(".")[0]
    op = OP_ALIASES.get(op, op)
    m = re.match(r"^(loop)\d+$", op)
    if m:
        op = m.group(1)
    # setf-getf.1, incf-getf.2, push-getf.1 -> getf
    m = re.match(r"^(setf|incf|decf|push|pop)-(.+)$", op)
    if m and op not in KNOWN_OPS and m.group(2) in KNOWN_OPS:
        return m.group(2)
    # position-list.1, find-vector.3, remove-string.2 ... -> the operator
    for suffix in ("-bit-vector", "-simple-vector", "-vector", "-list", "-string"):
        if op.endswith(suffix) and op[:-len(suffix)] in KNOWN_OPS:
            return op[:-len(suffix)]
    return op


# --- collecting cases ---------------------------------------------------------
Case = collections.namedtuple("Case", "name op area file form expected")


DEFINERS = ("defun", "defmacro", "defvar", "defparameter", "defconstant", "defgeneric",
            "defstruct", "define-condition", "defclass")
# Top-level forms the suite wraps its definitions in.
WRAPPERS = ("report-and-ignore-errors", "eval-when", "progn")


def defined_names(parts):
    """The names a top-level form (split into parts) defines."""
    head = parts[0].lower()
    if head in DEFINERS and len(parts) > 1:
        nm = parts[1]
        if nm.startswith("("):  # (defstruct (name ...)), (defun (setf name) ...)
            sub = subforms(nm)
            nm = sub[1] if len(sub) > 1 and sub[0].lower() == "setf" else (sub[0] if sub else nm)
        return {nm.lower()}
    names = set()
    if head in WRAPPERS:
        for sub in parts[1:]:
            if sub.startswith("("):
                try:
                    inner = subforms(sub)
                except (ValueError, IndexError):
                    continue
                if inner:
                    names |= defined_names(inner)
    return names


def collect(directory):
    """The cases, and the suite's helpers: {path: names} for the names each
    file defines, with the names of the support files (auxiliary/*.lsp and
    the suite's root files, which hold no tests) under "" because every case
    may call them; any other file's definitions concern its own cases."""
    cases, helpers = [], collections.defaultdict(set)
    for root, _, files in os.walk(directory):
        for f in sorted(files):
            if not f.endswith(".lsp"):
                continue
            path = os.path.join(root, f)
            area = os.path.relpath(root, directory)
            area = "misc" if area == "." else area.split(os.sep)[0]
            text = open(path, encoding="utf-8", errors="replace").read()
            try:
                forms = toplevel_forms(text)
            except (ValueError, IndexError) as e:
                print(f"warning: cannot split {path}: {e}", file=sys.stderr)
                continue
            defined, ncases = set(), len(cases)
            for form in forms:
                if not form.startswith("("):
                    continue
                try:
                    parts = subforms(form)
                except (ValueError, IndexError):
                    continue
                if not parts:
                    continue
                head = parts[0].lower()
                names = defined_names(parts)
                if names:
                    defined |= names
                elif head == "deftest" and len(parts) >= 3:
                    rest = parts[2:]
                    while len(rest) >= 2 and rest[0].startswith(":"):
                        rest = rest[2:]  # :notes / :description properties
                    if not rest:
                        continue
                    cases.append(Case(parts[1], operator_of(parts[1]), area,
                                      path, rest[0], rest[1:]))
                elif head == "def-format-test" and len(parts) >= 5:
                    # (def-format-test NAME FORMAT-STRING (ARGS...) RESULT)
                    fargs = parts[3]
                    fargs = " ".join(subforms(fargs)) if fargs.startswith("(") else ""
                    cases.append(Case(parts[1], operator_of(parts[1]), area, path,
                                      "(format nil %s %s)" % (parts[2], fargs),
                                      [parts[4]]))
                elif head == "def-fold-test" and len(parts) == 3:
                    cases.append(Case(parts[1], operator_of(parts[1]), area, path,
                                      "(flet ((%f () " + parts[2] + ")) (eq (%f) (%f)))",
                                      ["nil"]))
            # The support files are those the suite loads before its tests:
            # auxiliary/ and the files at its root. random/ is the random
            # tester (loaded by run.lsp, not by the tests), so its definitions,
            # like a test file's, concern only cases of its own file.
            rel = os.path.relpath(path, directory)
            support = len(cases) == ncases and (rel.startswith("auxiliary" + os.sep)
                                                or os.sep not in rel)
            helpers["" if support else path] |= defined
    return cases, helpers


def prelude_names():
    names = set()
    for form in toplevel_forms(open(PRELUDE).read()):
        p = subforms(form)
        if len(p) > 1:
            names.add(p[1].lower())
    return names


def static_skip(case, helpers):
    syms = symbols_of(case.form)
    hits = sorted(syms & (helpers[""] | helpers.get(case.file, set())))
    if hits:
        return "suite helper not in prelude.lisp", hits[0]
    for cat, words in SKIP_SYMBOLS.items():
        hit = syms & set(words.lower().split())
        if hit:
            return cat, sorted(hit)[0]
    bare = re.sub(r'"(\\.|[^"\\])*"', '""', case.form)
    bare = re.sub(r"#\\.[\w-]*", "C", bare)
    bare = re.sub(r"\|[^|]*\|", "x", bare)
    for cat, rx in SKIP_TEXT:
        m = rx.search(bare)
        if m:
            return cat, m.group(0)
    for tok in syms:
        if re.fullmatch(r"[-+]?\d+", tok) and abs(int(tok)) >= BIGNUM_LIMIT:
            return "ratios/bignums/complexes", tok
    return None


# --- SBCL ---------------------------------------------------------------------
SBCL_DRIVER = r"""
(setf *read-default-float-format* 'double-float)
(proclaim '(optimize (safety 3)))
(defun %run-case (id text expected)
  (let ((out *standard-output*))
    (format out "~%@@CASE ~a~%" id)
    (handler-case
        (let* ((form (let ((*package* (find-package "CL-USER"))) (read-from-string text)))
               (vals (handler-bind ((warning #'muffle-warning))
                       (let ((*standard-output* (make-broadcast-stream))
                             (*error-output* (make-broadcast-stream)))
                         (sb-ext:with-timeout %TIMEOUT%
                           (multiple-value-list (eval form)))))))
          (format out "@@OK~%@@EXP ~a~%"
                  (handler-case
                      (if (equalp vals (let ((*package* (find-package "CL-USER")))
                                         (read-from-string (concatenate 'string "(" expected ")"))))
                          "MATCH" "DIFF")
                    (error () "UNKNOWN")))
          (dolist (v vals)
            (let ((*print-case* :upcase) (*print-pretty* nil) (*print-readably* nil)
                  (*print-circle* nil) (*package* (find-package "CL-USER")))
              (prin1 v out))
            (terpri out)))
      (sb-ext:timeout () (format out "@@TIMEOUT~%"))
      (serious-condition (c)
        (format out "@@ERROR ~a~%"
                (remove #\Newline (handler-case (princ-to-string c) (error () "?"))))))
    (format out "@@END~%")
    (finish-output out)))
"""


def lisp_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_sbcl(cases, sbcl, timeout):
    with tempfile.TemporaryDirectory() as d:
        drv = os.path.join(d, "driver.lisp")
        with open(drv, "w") as f:
            f.write(SBCL_DRIVER.replace("%TIMEOUT%", str(timeout)))
            f.write("(handler-bind ((warning #'muffle-warning)) (load %s))\n"
                    % lisp_string(PRELUDE))
            for i, c in enumerate(cases):
                f.write("(%%run-case %d %s %s)\n" % (i, lisp_string(c.form),
                                                     lisp_string(" ".join(c.expected))))
        p = subprocess.run([sbcl, "--noinform", "--non-interactive", "--no-userinit",
                            "--no-sysinit", "--disable-debugger", "--load", drv],
                           capture_output=True, text=True, errors="replace",
                           timeout=max(600, timeout * len(cases)))
    results = {}
    for block in p.stdout.split("\n@@CASE ")[1:]:
        head, _, body = block.partition("\n")
        body = body.split("@@END")[0]
        i = int(head)
        if body.startswith("@@OK\n"):
            exp, _, vals = body[5:].partition("\n")
            results[i] = ("ok", vals.rstrip("\n"), exp.split()[-1])
        elif body.startswith("@@TIMEOUT"):
            results[i] = ("timeout", "", "DIFF")
        else:
            results[i] = ("error", body[len("@@ERROR "):].strip(), "DIFF")
    return results


# --- sexpgpu ------------------------------------------------------------------
def run_ours(binary, form, timeout):
    argv = [binary, "eval", PRELUDE, "-e", form, "--readably"]
    tmp = None
    if "\0" in form:
        # A NUL character (length.string.4 has one in a string) cannot go on
        # a command line: the form goes into a copy of the prelude, which
        # keeps its values for -e to return.
        fd, tmp = tempfile.mkstemp(suffix=".lisp")
        with os.fdopen(fd, "w") as f:
            f.write(open(PRELUDE).read())
            f.write("\n(defparameter *%%case-values* (multiple-value-list %s))\n" % form)
        argv = [binary, "eval", tmp, "-e", "(values-list *%case-values*)", "--readably"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return ("timeout", "")
    finally:
        if tmp:
            os.unlink(tmp)
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])
        first = next((l for l in msg if re.search(r"\b[EW]-[A-Z-]+", l)), msg[0])
        return ("error", first.strip())
    return ("ok", p.stdout.rstrip("\n"))


# --- comparison ---------------------------------------------------------------
SINGLE_RE = re.compile(r"^[-+]?\d+\.\d+(?:f[-+]?\d+)$", re.I)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def tokens(s):
    return re.findall(r'"(?:\\.|[^"\\])*"|[()]|[^\s()"]+', s)


def same_output(sbcl_out, our_out):
    if sbcl_out.lower() == our_out.lower():
        return True
    # SBCL computes single-floats where this language computes doubles
    # (every float is a double): a single-float token matches our double
    # when the double rounds to it.
    a, b = tokens(sbcl_out), tokens(our_out)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.lower() == y.lower():
            continue
        if SINGLE_RE.match(x):
            try:
                if f32(float(x.lower().replace("f", "e"))) == f32(float(y)):
                    continue
            except ValueError:
                pass
        return False
    return True


RESULT_SKIPS = [
    ("ratios/bignums/complexes", re.compile(r"(?<![\w.])[-+]?\d+/\d+(?![\w/])|#C\(")),
    ("unreadable/identity result (#<...>, gensym)", re.compile(r"#<|#:")),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("suite_dir", help="directory holding ansi-test .lsp files")
    ap.add_argument("--sexpgpu", default=None, help="the sexpgpu binary")
    ap.add_argument("--sbcl", default="sbcl")
    ap.add_argument("--ops", default=None,
                    help="comma-separated operators (test-name prefixes), 'all', "
                         "or @FILE with one per line; default: language.md's list")
    ap.add_argument("--failures", default=None, help="write failing cases here")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--limit", type=int, default=0, help="at most N cases (debugging)")
    args = ap.parse_args()

    binary = args.sexpgpu
    if binary is None:
        for cand in ("/tmp/build-ansi/core/sexpgpu", os.path.join(HERE, "../../build/core/sexpgpu")):
            if os.path.exists(cand):
                binary = cand
                break
    if not binary or not os.path.exists(binary):
        sys.exit("run_ansi.py: no sexpgpu binary; pass --sexpgpu PATH")

    if args.ops is None:
        ops = set(DEFAULT_OPS)
    elif args.ops == "all":
        ops = None
    elif args.ops.startswith("@"):
        ops = {l.strip().lower() for l in open(args.ops[1:]) if l.strip()}
    else:
        ops = {o.strip().lower() for o in args.ops.split(",") if o.strip()}

    cases, helpers = collect(args.suite_dir)
    for names in helpers.values():
        names -= prelude_names()
    not_selected = [c for c in cases if ops is not None and c.op not in ops]
    cases = [c for c in cases if ops is None or c.op in ops]
    if args.limit:
        cases = cases[:args.limit]

    skips = collections.Counter()
    skip_examples = collections.defaultdict(collections.Counter)
    kept = []
    for c in cases:
        s = static_skip(c, helpers)
        if s:
            skips[s[0]] += 1
            skip_examples[s[0]][s[1]] += 1
        else:
            kept.append(c)

    sb = run_sbcl(kept, args.sbcl, int(args.timeout))
    final = []
    for i, c in enumerate(kept):
        kind, out, sbexp = sb.get(i, ("error", "no result from SBCL", "DIFF"))
        if kind == "timeout":
            skips["SBCL timed out"] += 1
            continue
        if kind == "error" and ("READ error" in out or "READER-ERROR" in out.upper()
                                or "Package" in out and "does not exist" in out):
            skips["SBCL cannot read the form"] += 1
            continue
        if kind == "error" and re.search(r"COMMON-LISP-USER::\S+ is (undefined|unbound)", out):
            skips["suite helper not provided (undefined in SBCL)"] += 1
            skip_examples["suite helper not provided (undefined in SBCL)"][
                re.search(r"COMMON-LISP-USER::(\S+)", out).group(1).lower()] += 1
            continue
        if kind == "ok":
            cat = next((cat for cat, rx in RESULT_SKIPS if rx.search(out)), None)
            if cat is None and any(re.fullmatch(r"[-+]?\d+", t) and abs(int(t)) >= BIGNUM_LIMIT
                                   for t in tokens(out)):
                cat = "ratios/bignums/complexes"
            if cat:
                skips[cat + " (SBCL's result)"] += 1
                continue
        final.append((c, kind, out, sbexp))

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        ours = list(ex.map(lambda t: run_ours(binary, t[0].form, args.timeout), final))

    per_op = collections.defaultdict(lambda: [0, 0])
    per_area = collections.defaultdict(lambda: [0, 0])
    failures = []
    sbcl_deviates = [0, 0]  # cases where SBCL's values differ from the suite's: passed, failed
    for (c, kind, out, sbexp), (okind, oout) in zip(final, ours):
        if kind == "ok":
            ok = okind == "ok" and same_output(out, oout)
        else:  # SBCL signalled an error at top level: ours must fail too
            ok = okind == "error"
        per_op[c.op][0 if ok else 1] += 1
        per_area[c.area][0 if ok else 1] += 1
        if sbexp != "MATCH":
            sbcl_deviates[0 if ok else 1] += 1
        if not ok:
            failures.append((c, kind, out + ("" if sbexp == "MATCH" else
                                             "\n(SBCL's values differ from the suite's expected: "
                                             + " ".join(c.expected) + ")"), okind, oout))

    def pct(p, f):
        return 100.0 * p / (p + f) if p + f else 0.0

    print("== per operator (passed/total) ==")
    for op in sorted(per_op):
        p, f = per_op[op]
        print(f"  {op:28s} {p:4d}/{p + f:<4d} {pct(p, f):5.1f}%")
    print("== per area ==")
    for a in sorted(per_area):
        p, f = per_area[a]
        print(f"  {a:28s} {p:4d}/{p + f:<4d} {pct(p, f):5.1f}%")
    print("== skipped ==")
    if not_selected:
        print(f"  {len(not_selected):5d}  operator not selected")
    for cat, n in skips.most_common():
        ex_ = ", ".join(f"{k} {v}" for k, v in skip_examples[cat].most_common(6))
        print(f"  {n:5d}  {cat}" + (f"  [{ex_}]" if ex_ else ""))
    passed = sum(p for p, _ in per_op.values())
    failed = sum(f for _, f in per_op.values())
    print(f"== overall: {pct(passed, failed):.1f}% of {passed + failed} cases ==")
    p2, f2 = passed - sbcl_deviates[0], failed - sbcl_deviates[1]
    print(f"   ({sum(sbcl_deviates)} cases where SBCL's values differ from the suite's "
          f"expected ones: {sbcl_deviates[0]} passed, {sbcl_deviates[1]} failed; "
          f"without them {pct(p2, f2):.1f}% of {p2 + f2})")

    if args.failures:
        with open(args.failures, "w") as f:
            for c, kind, out, okind, oout in failures:
                f.write(f"=== {c.name}  [{c.op}]  {os.path.relpath(c.file, args.suite_dir)}\n")
                f.write(c.form + "\n")
                f.write(f"--- sbcl ({kind}):\n{out}\n")
                f.write(f"--- sexpgpu ({okind}):\n{oout}\n\n")
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
