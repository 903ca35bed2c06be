#!/usr/bin/env python3
"""Checks gpulse's own NVML declarations against an independent reference.

Usage: nvml_abi_check.py [--header H] [--resolver C] [--reference RS]
                         [--known FILE] [--cc CC]

gpulse declares the NVML ABI itself (src/sources/nvml_abi.h: no nvml.h in
Debian main). The reference is the bindgen output that Debian's
librust-nvml-wrapper-sys-dev generated from NVIDIA's own nvml.h
(bindings.rs). Everything is driven by what the header declares, never by
a list kept here, so a declaration added later is checked without edits:

- structs and unions: the compiler lays out gpulse's declaration and a C
  translation of the reference's Rust fields (the C ABI rules are the
  compiler's, the field types the reference's); every field path must sit
  at the same offset with the same size and kind, and every struct must
  have the same size;
- enum constants and object-like macros: equal values (modulo 2^64, so
  NVML's `-1` and gpulse's all-ones agree); a macro NAME_vN with a
  reference type NAME_vN_t is a version word, size | N << 24;
- functions: nvml.c binds each NVML symbol name to a function-pointer type
  of the header (SYM(...), sym3(...), or any statement that names one such
  type and the symbol's string); the return type, the number of
  parameters and each parameter's kind (pointer to which struct, 32- or
  64-bit integer or enum, double, handle) must match. gpulse's `void *`
  matches any pointer and is reported as loose.

What gpulse declares and the reference lacks (newer than the crate's
nvml.h) is listed as "not in the reference", never silently passed.
Deliberate differences (a newer header's larger array) are listed with
their reason in --known; one there that no longer differs fails too, so
the list cannot go stale. Exit 0: no difference; 1: differences; 2: the
check itself could not run (missing file, unreadable declaration).
"""

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def die(msg):
    print("nvml abi check: " + msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- kinds --
# A kind is what the ABI sees: 'i8'..'i64' (integers and enums; signedness
# does not change how they are passed or laid out), 'f32'/'f64', 'void',
# 'struct:NAME' (NAME canonical: the reference's struct name), 'ptr(K)',
# 'arr(N,K)'.

C_SCALARS = {
    ("char",): "i8", ("signed", "char"): "i8", ("unsigned", "char"): "i8",
    ("short",): "i16", ("short", "int"): "i16", ("unsigned", "short"): "i16",
    ("unsigned", "short", "int"): "i16", ("signed", "short"): "i16",
    ("int",): "i32", ("signed",): "i32", ("signed", "int"): "i32", ("unsigned",): "i32",
    ("unsigned", "int"): "i32",
    ("long",): "i64", ("long", "int"): "i64", ("unsigned", "long"): "i64",
    ("unsigned", "long", "int"): "i64", ("signed", "long"): "i64",
    ("long", "long"): "i64", ("long", "long", "int"): "i64", ("unsigned", "long", "long"): "i64",
    ("unsigned", "long", "long", "int"): "i64", ("signed", "long", "long"): "i64",
    ("float",): "f32", ("double",): "f64", ("void",): "void", ("_Bool",): "i8",
}
C_TYPE_WORDS = {"char", "short", "int", "long", "signed", "unsigned", "float", "double", "void", "_Bool"}

RUST_PRIMS = {
    "c_char": ("char", "i8"), "c_schar": ("signed char", "i8"), "c_uchar": ("unsigned char", "i8"),
    "c_short": ("short", "i16"), "c_ushort": ("unsigned short", "i16"),
    "c_int": ("int", "i32"), "c_uint": ("unsigned int", "i32"),
    "c_long": ("long", "i64"), "c_ulong": ("unsigned long", "i64"),
    "c_longlong": ("long long", "i64"), "c_ulonglong": ("unsigned long long", "i64"),
    "f32": ("float", "f32"), "f64": ("double", "f64"), "bool": ("_Bool", "i8"),
    "u8": ("unsigned char", "i8"), "i8": ("signed char", "i8"), "u16": ("unsigned short", "i16"),
    "i16": ("short", "i16"), "u32": ("unsigned int", "i32"), "i32": ("int", "i32"),
    "u64": ("unsigned long long", "i64"), "i64": ("long long", "i64"),
    "usize": ("unsigned long", "i64"), "isize": ("long", "i64"), "c_void": ("void", "void"),
}


# ------------------------------------------------------------ reference --
class Reference:
    """What bindings.rs says: consts, aliases, structs, functions."""

    def __init__(self, path):
        text = open(path, encoding="utf-8").read()
        self.path = path
        self.consts = {}
        for m in re.finditer(r"pub const (\w+):\s*([^=]+?)\s*=\s*([^;]+);", text):
            name, typ, val = m.group(1), m.group(2).strip(), m.group(3).strip()
            try:
                v = int(val, 0)
            except ValueError:
                continue  # strings, floats
            self.consts.setdefault(name, v)
            # bindgen names an enum's constants TYPE_NAME
            t = typ.split("::")[-1]
            if t not in RUST_PRIMS and name.startswith(t + "_"):
                self.consts.setdefault(name[len(t) + 1:], v)
        self.aliases = {m.group(1): m.group(2).strip()
                        for m in re.finditer(r"pub type (\w+)\s*=\s*([^;]+);", text)}
        for m in re.finditer(r"pub use self::(\w+) as (\w+);", text):
            self.aliases.setdefault(m.group(2), m.group(1))
        self.records = {}  # name -> (kind 'struct'|'union', [(field, rust type)] or None if opaque)
        for m in re.finditer(r"pub (struct|union) (\w+)\s*\{(.*?)\n\}", text, re.S):
            kind, name, body = m.group(1), m.group(2), m.group(3)
            if name == "NvmlLib":
                continue
            fields = []
            for f in re.finditer(r"(?:pub )?(\w+):\s*([^,]+(?:<[^>]*>)?),", body):
                fields.append((f.group(1), f.group(2).strip()))
            opaque = len(fields) == 1 and fields[0][0] == "_unused"
            self.records[name] = (kind, None if opaque else fields)
        self.functions = {}
        lib = re.search(r"pub struct NvmlLib \{(.*?)\n\}", text, re.S)
        if not lib:
            die(f"no NvmlLib in {path}: not the bindgen output this check reads")
        for m in re.finditer(r"pub (\w+):\s*Result<\s*unsafe extern \"C\" fn\((.*?)\)\s*(?:->\s*([^,]+?))?\s*,\s*::libloading::Error",
                             lib.group(1), re.S):
            params = [p.strip() for p in split_top(m.group(2)) if p.strip()]
            types = [p.split(":", 1)[1].strip() for p in params]
            self.functions[m.group(1)] = (m.group(3).strip() if m.group(3) else "()", types)

    def resolve(self, name, seen=()):
        """Follows aliases; returns a record name, a Rust type text, or None."""
        if name in self.records:
            return name
        if name in self.aliases and name not in seen:
            target = self.aliases[name]
            if re.fullmatch(r"\w+", target):
                r = self.resolve(target, seen + (name,))
                return r if r is not None else target
            return target
        return None

    def kind(self, rtype):
        """Kind of a Rust type text."""
        t = rtype.strip()
        if t in ("()",):
            return "void"
        m = re.fullmatch(r"\*(?:mut|const)\s+(.+)", t)
        if m:
            return f"ptr({self.kind(m.group(1))})"
        m = re.fullmatch(r"\[(.+);\s*(\d+)usize\]", t)
        if m:
            return f"arr({m.group(2)},{self.kind(m.group(1))})"
        if t.startswith("::std::option::Option<") or t.startswith("Option<"):
            return "ptr(fn)"
        last = t.split("::")[-1]
        if last in RUST_PRIMS:
            return RUST_PRIMS[last][1]
        if last in self.records:
            return f"struct:{last}"
        if last in self.aliases:
            return self.kind(self.aliases[last])
        return f"unknown:{t}"

    def canon(self, name):
        """The reference's record name for a C type name, or None."""
        r = self.resolve(name)
        return r if r in self.records else None


def split_top(s, sep=","):
    """Splits at sep outside (), <>, [], {}."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


# --------------------------------------------------------------- gpulse --
TOKEN = re.compile(r"[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\.\.\.|[{}()\[\];,*=<>+\-|&~!?:/.%^]")


class Header:
    """What nvml_abi.h declares, read from its preprocessed text."""

    def __init__(self, path, cc, ref):
        self.path = path
        self.ref = ref
        raw = open(path, encoding="utf-8").read()
        self.macros = []
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)([ \t(]?)(.*)$", raw, re.M):
            name, after, body = m.group(1), m.group(2), m.group(3).strip()
            if after == "(":
                continue  # function-like
            body = re.sub(r"/\*.*?\*/|//.*$", "", body).strip()
            if body and not body.startswith('"'):
                self.macros.append(name)
        noinc = re.sub(r"^[ \t]*#[ \t]*include.*$", "", raw, flags=re.M)
        try:
            pre = subprocess.run(shlex.split(cc) + ["-E", "-P", "-x", "c", "-"], input=noinc, capture_output=True,
                                 text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            die(f"cannot preprocess {path} with {cc}: {getattr(e, 'stderr', e)}")
        self.typedefs = {}    # name -> ('scalar', kind) | ('enum',) | ('handle', tag) | ('record', kind, fields) | ('fn', ret, [params])
        self.enum_consts = []
        self.records = {}     # typedef name -> ('struct'|'union', fields)
        toks = TOKEN.findall(pre)
        for decl in self._split(toks, ";"):
            if decl:
                self._decl(decl)

    @staticmethod
    def _split(toks, sep):
        out, cur, depth = [], [], 0
        for t in toks:
            if t in "({[":
                depth += 1
            elif t in ")}]":
                depth -= 1
            if t == sep and depth == 0:
                out.append(cur)
                cur = []
            else:
                cur.append(t)
        if cur:
            out.append(cur)
        return out

    def _fail(self, toks, why):
        die(f"{self.path}: cannot read declaration '{' '.join(toks)[:120]}': {why}")

    def _decl(self, t):
        if t[0] == "_Static_assert":
            return
        typedef = t[0] == "typedef"
        body = t[1:] if typedef else t
        if body[0] == "enum" and "{" in body:
            close = body.index("}")
            for item in self._split(body[body.index("{") + 1:close], ","):
                if item:
                    self.enum_consts.append(item[0])
            if typedef:
                self.typedefs[body[close + 1]] = ("scalar", "i32")
            elif close + 1 != len(body):
                self._fail(t, "an enum object")
            return
        if not typedef:
            self._fail(t, "only typedefs, enums and _Static_assert are expected")
        if body[0] in ("struct", "union") and "{" in body[:3]:
            fields, rest = self._record(body, t)
            if len(rest) != 1:
                self._fail(t, "one typedef name after the braces")
            self.records[rest[0]] = (body[0], fields)
            self.typedefs[rest[0]] = ("record", body[0])
            return
        if "(" in body and body[body.index("(") + 1:body.index("(") + 2] == ["*"]:
            i = body.index("(")
            name = body[i + 2]
            ret = self.kind(body[:i], t)
            ps = body[i + 4:]
            if not ps or ps[0] != "(" or ps[-1] != ")":
                self._fail(t, "a function-pointer typedef")
            params = [p for p in self._split(ps[1:-1], ",") if p]
            if params == [["void"]]:
                params = []
            self.typedefs[name] = ("fn", ret, [self.kind(self._strip_name(p), t) for p in params])
            return
        name = body[-1]
        if body[0] == "struct" and len(body) == 4 and body[2] == "*":
            self.typedefs[name] = ("handle", body[1])
            return
        self.typedefs[name] = ("scalar", self.kind(body[:-1], t))

    def _strip_name(self, p):
        """A parameter's type tokens without its name, if it has one."""
        if len(p) > 1 and re.fullmatch(r"[A-Za-z_]\w*", p[-1]) and p[-1] not in C_TYPE_WORDS \
                and p[-1] not in self.typedefs and p[-2] not in ("struct", "union", "enum"):
            return p[:-1]
        return p

    def _record(self, body, t):
        """Fields [(name, kind, subfields|None)] of a struct/union body."""
        i = body.index("{")
        depth, j = 0, i
        for j in range(i, len(body)):
            depth += body[j] == "{"
            depth -= body[j] == "}"
            if depth == 0:
                break
        fields = []
        for f in self._split(body[i + 1:j], ";"):
            if not f:
                continue
            if f[0] in ("struct", "union") and "{" in f[:3]:
                sub, rest = self._record(f, t)
                fields.append((rest[-1], f"record:{f[0]}", sub))
                continue
            base = [x for x in f if x not in ("const", "volatile")]
            decls = self._split(base, ",")
            # the first declarator carries the base type words
            first = decls[0]
            k = 0
            while k < len(first) and (first[k] in C_TYPE_WORDS or first[k] in self.typedefs
                                      or first[k] in ("struct", "union", "enum")
                                      or (k > 0 and first[k - 1] in ("struct", "union", "enum"))):
                k += 1
            btype = first[:k]
            for n, d in enumerate(decls):
                dd = d[k:] if n == 0 else d
                stars = dd.count("*")
                names = [x for x in dd if re.fullmatch(r"[A-Za-z_]\w*", x)]
                if len(names) != 1:
                    self._fail(t, f"field declarator {' '.join(dd)}")
                kind = self.kind(btype + ["*"] * stars, t)
                for m in reversed(re.findall(r"\[\s*(\w+)\s*\]", " ".join(dd))):
                    kind = f"arr({int(m.rstrip('uUlL'), 0)},{kind})"
                fields.append((names[0], kind, None))
        return fields, body[j + 1:]

    def kind(self, toks, t):
        toks = [x for x in toks if x not in ("const", "volatile")]
        stars = 0
        while toks and toks[-1] == "*":
            stars += 1
            toks = toks[:-1]
        if len(toks) == 2 and toks[0] in ("struct", "union"):
            k = f"struct:{self.ref.canon(toks[1]) or 'gpulse:' + toks[1]}"
        elif tuple(toks) in C_SCALARS:
            k = C_SCALARS[tuple(toks)]
        elif len(toks) == 1 and toks[0] in self.typedefs:
            td = self.typedefs[toks[0]]
            if td[0] == "scalar":
                k = td[1]
            elif td[0] == "handle":
                k = f"ptr(struct:{self.ref.canon(td[1]) or 'gpulse:' + td[1]})"
            elif td[0] == "record":
                k = f"struct:{self.ref.canon(toks[0]) or 'gpulse:' + toks[0]}"
            else:
                k = "ptr(fn)" if stars == 0 else "ptr(fn)"
        else:
            self._fail(t, f"unknown type '{' '.join(toks)}'")
        for _ in range(stars):
            k = f"ptr({k})"
        return k


def leaf_paths(fields, prefix=""):
    """[(path, kind)] of every field and nested field."""
    out = []
    for name, kind, sub in fields:
        out.append((prefix + name, kind))
        if sub:
            out += leaf_paths(sub, prefix + name + ".")
    return out


# ---------------------------------------------------------------- probe --
class Probe:
    """One C program that prints gpulse's and the reference's numbers."""

    def __init__(self, header, ref):
        self.header, self.ref = header, ref
        self.defs, self.done = [], set()
        self.lines = []

    def c_rust(self, rtype, name):
        """A C declarator for a Rust field type (for the layout probe)."""
        t = rtype.strip()
        m = re.fullmatch(r"\[(.+);\s*(\d+)usize\]", t)
        if m:
            return self.c_rust(m.group(1), f"{name}[{m.group(2)}]")
        if re.fullmatch(r"\*(?:mut|const)\s+.+", t) or "Option<" in t:
            return f"void *{name}"
        last = t.split("::")[-1]
        if last in RUST_PRIMS:
            return f"{RUST_PRIMS[last][0]} {name}"
        r = self.ref.resolve(last)
        if r in self.ref.records:
            return f"{self.ref_record(r)} {name}"
        if r is not None and r != last:
            return self.c_rust(r, name)
        raise KeyError(t)

    def ref_record(self, name):
        kind, fields = self.ref.records[name]
        cname = f"{kind} ref_{name}"
        if name in self.done:
            return cname
        if fields is None:
            raise KeyError(f"{name} is opaque")
        members = [self.c_rust(ft, fn) + ";" for fn, ft in fields]
        self.done.add(name)
        self.defs.append(f"{cname} {{ {' '.join(members)} }};")
        return cname

    def program(self, header_copy):
        h, r = self.header, self.ref
        out = ["#include <stddef.h>", "#include <stdio.h>", f'#include "{header_copy}"']
        body = []
        for tname, (kind, fields) in h.records.items():
            body.append(f'printf("g size {tname} %zu\\n", sizeof({tname}));')
            for path, _ in leaf_paths(fields):
                body.append(f'printf("g off {tname}.{path} %zu %zu\\n", offsetof({tname}, {path}), '
                            f'sizeof((({tname} *)0)->{path}));')
            rn = r.canon(tname)
            if rn is None:
                continue
            try:
                cname = self.ref_record(rn)
            except KeyError as e:
                body.append(f'printf("r untranslatable {tname} {e}\\n");')
                continue
            body.append(f'printf("r size {tname} %zu\\n", sizeof({cname}));')
            for path, _ in leaf_paths(fields):
                if ref_has_path(r, rn, path):
                    body.append(f'printf("r off {tname}.{path} %zu %zu\\n", offsetof({cname}, {path}), '
                                f'sizeof((({cname} *)0)->{path}));')
        for name in h.enum_consts:
            body.append(f'printf("g val {name} %llu\\n", (unsigned long long)({name}));')
        for name in h.macros:
            body.append(f'printf("g val {name} %llu\\n", (unsigned long long)({name}));')
        # reference version words: sizeof of the reference struct
        for name in h.macros:
            m = re.fullmatch(r"(\w+)_v(\d+)", name)
            if m and name not in r.consts and r.canon(name + "_t"):
                try:
                    cname = self.ref_record(r.canon(name + "_t"))
                except KeyError:
                    continue
                body.append(f'printf("r ver {name} %llu\\n", (unsigned long long)sizeof({cname}) | '
                            f'((unsigned long long){m.group(2)} << 24));')
        return "\n".join(out + self.defs + ["int main(void) {"] + body + ["return 0; }"]) + "\n"


def ref_has_path(ref, rname, path):
    parts = path.split(".")
    cur = rname
    for i, p in enumerate(parts):
        kind, fields = ref.records.get(cur, (None, None))
        if not fields:
            return False
        ft = dict(fields).get(p)
        if ft is None:
            return False
        if i + 1 < len(parts):
            cur = ref.canon(ft.split("::")[-1])
            if cur is None:
                return False
    return True


def ref_field_kind(ref, rname, path):
    cur, ft = rname, None
    for p in path.split("."):
        ft = dict(ref.records[cur][1])[p]
        cur = ref.canon(ft.split("::")[-1])
    k = ref.kind(ft)
    return k


def norm_record_kind(k):
    # nested anonymous records compare by their own fields
    return "record" if k.startswith("record:") or k.startswith("struct:gpulse:") else k


# ----------------------------------------------------------------- main --
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--header", default=os.path.join(ROOT, "src/sources/nvml_abi.h"))
    ap.add_argument("--resolver", default=os.path.join(ROOT, "src/sources/nvml.c"),
                    help="the C file that binds NVML symbol names to the header's function types")
    ap.add_argument("--reference", default=None, help="bindings.rs of nvml-wrapper-sys")
    ap.add_argument("--known", default=os.path.join(ROOT, "tests/data/nvml-abi-known.txt"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()

    refpath = a.reference
    if refpath is None:
        found = sorted(glob.glob("/usr/share/cargo/registry/nvml-wrapper-sys-*/src/bindings.rs"))
        if not found:
            die("no reference bindings: install librust-nvml-wrapper-sys-dev (scripts/deps.sh test)")
        refpath = found[-1]
    for p in (a.header, a.resolver, refpath):
        if not os.path.isfile(p):
            die(f"cannot read {p}")
    ref = Reference(refpath)
    hdr = Header(a.header, a.cc, ref)

    known = {}
    if os.path.isfile(a.known):
        for line in open(a.known, encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, why = line.partition("#")
                known[" ".join(key.split())] = why.strip()

    diffs, notref, loose = [], [], []

    def differ(key, text):
        diffs.append((" ".join(key.split()), text))

    # --- the compiler's numbers
    probe = Probe(hdr, ref)
    with tempfile.TemporaryDirectory(prefix="nvml-abi-") as tmp:
        # the header's own _Static_assert pins are the build's check; this
        # one reports each difference by name instead of stopping at one
        raw = open(a.header, encoding="utf-8").read()
        copy = os.path.join(tmp, "abi.h")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(re.sub(r"_Static_assert\s*\((?:[^;]|\n)*?\)\s*;", "", raw))
        src = os.path.join(tmp, "probe.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(probe.program(copy))
        exe = os.path.join(tmp, "probe")
        cp = subprocess.run(shlex.split(a.cc) + ["-std=c11", "-w", "-o", exe, src], capture_output=True, text=True)
        if cp.returncode != 0:
            die(f"the layout probe does not compile:\n{cp.stderr[-2000:]}")
        lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.splitlines()
    g, r = {}, {}
    for line in lines:
        side, what, key, *vals = line.split(" ")
        (g if side == "g" else r)[(what, key)] = vals

    # --- records
    nfields = 0
    for tname, (kind, fields) in hdr.records.items():
        rn = ref.canon(tname)
        if rn is None:
            notref.append(f"struct {tname} ({g[('size', tname)][0]} bytes)")
            continue
        if ("untranslatable", tname) in r:
            die(f"cannot translate the reference's {rn}: {' '.join(r[('untranslatable', tname)])}")
        gs, rs = int(g[("size", tname)][0]), int(r[("size", tname)][0])
        if gs != rs:
            differ(f"size {tname}", f"{tname}: size {gs}, reference {rn} {rs}")
        for path, gk in leaf_paths(fields):
            nfields += 1
            if not ref_has_path(ref, rn, path):
                notref.append(f"field {tname}.{path}")
                continue
            goff, gsz = map(int, g[("off", f"{tname}.{path}")])
            roff, rsz = map(int, r[("off", f"{tname}.{path}")])
            rk = ref_field_kind(ref, rn, path)
            if goff != roff:
                differ(f"offset {tname}.{path}", f"{tname}.{path}: offset {goff}, reference {roff}")
            if gsz != rsz:
                differ(f"field {tname}.{path}", f"{tname}.{path}: size {gsz}, reference {rsz}")
            elif norm_record_kind(gk) != norm_record_kind(rk) and not (
                    gk.startswith("record") and rk.startswith("struct:")):
                differ(f"kind {tname}.{path}", f"{tname}.{path}: {gk}, reference {rk}")
        # reference fields gpulse left out
        gpaths = {p for p, _ in leaf_paths(fields)}
        for fname, _ in ref.records[rn][1] or []:
            if fname not in gpaths and kind == "struct":
                differ(f"missing {tname}.{fname}", f"{tname}: no field {fname} (reference {rn} has it)")

    # --- values
    nvals, nver = 0, 0
    for name in hdr.enum_consts + hdr.macros:
        gv = int(g[("val", name)][0])
        if ("ver", name) in r:
            nver += 1
            rv = int(r[("ver", name)][0])
            if gv != rv:
                differ(f"const {name}", f"{name}: version word {gv:#x}, reference {rv:#x} "
                       f"(sizeof {name}_t | {int(rv) >> 24} << 24)")
            continue
        if name not in ref.consts:
            notref.append(f"const {name} = {gv}")
            continue
        nvals += 1
        rv = ref.consts[name] % (1 << 64)
        if gv != rv:
            differ(f"const {name}", f"{name}: {gv}, reference {ref.consts[name]}")

    # --- typedef'd scalars and handles
    for tname, td in hdr.typedefs.items():
        if td[0] in ("scalar", "handle") and tname in ref.aliases:
            gk = hdr.kind([tname], [tname])
            rk = ref.kind(tname)
            if gk != rk:
                differ(f"type {tname}", f"typedef {tname}: {gk}, reference {rk}")

    # --- functions
    resolver = open(a.resolver, encoding="utf-8").read()
    resolver = re.sub(r"/\*.*?\*/|//[^\n]*", "", resolver, flags=re.S)
    fntypes = {n for n, td in hdr.typedefs.items() if td[0] == "fn"}
    bound = {}
    for stmt in resolver.split(";"):
        used = [x for x in re.findall(r"\b\w+\b", stmt) if x in fntypes]
        names = re.findall(r'"(nvml\w+)"', stmt)
        if names and len(set(used)) == 1:
            for n in names:
                bound.setdefault(n, used[0])
    for ft in sorted(fntypes - set(bound.values())):
        differ(f"unbound {ft}", f"{ft}: no NVML symbol in {os.path.basename(a.resolver)} is resolved "
               "with this type, so its parameters are not checked")
    nfn = 0
    for fname, ft in sorted(bound.items()):
        _, gret, gparams = hdr.typedefs[ft]
        if fname not in ref.functions:
            notref.append(f"function {fname} ({ft})")
            continue
        nfn += 1
        rret, rparams = ref.functions[fname]
        rretk = ref.kind(rret)
        if gret != rretk:
            differ(f"return {fname}", f"{fname} ({ft}): returns {gret}, reference {rretk}")
        if len(gparams) != len(rparams):
            differ(f"params {fname}", f"{fname} ({ft}): {len(gparams)} parameters, reference {len(rparams)}")
            continue
        for i, (gk, rt) in enumerate(zip(gparams, rparams), 1):
            rk = ref.kind(rt)
            if gk == rk:
                continue
            if gk == "ptr(void)" and rk.startswith("ptr("):
                loose.append(f"{fname} parameter {i}: void * for {rk}")
                continue
            differ(f"param {fname} {i}", f"{fname} ({ft}): parameter {i} is {gk}, reference {rk}")

    # --- report
    bad = []
    for key, text in diffs:
        if key in known:
            print(f"known difference: {text} ({known[key]})")
        else:
            bad.append(text)
    seen = {k for k, _ in diffs}
    for key in known:
        if key not in seen:
            bad.append(f"'{key}' is listed in {os.path.basename(a.known)} but no longer differs: remove it")
    for n in notref:
        print(f"not in the reference: {n}")
    for n in loose:
        print(f"loose (gpulse passes an untyped pointer): {n}")
    for b in bad:
        print(f"DIFFERS: {b}")
    crate = os.path.basename(os.path.dirname(os.path.dirname(refpath)))
    print(f"nvml abi: {len(hdr.records)} structs ({nfields} fields), {nvals} constants, {nver} version words, "
          f"{nfn} functions checked against {crate}; {len(bad)} differences, "
          f"{len(diffs) - len([1 for k, _ in diffs if k not in known])} known, {len(notref)} not in the reference")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
