#!/usr/bin/env python3
"""Fill a man page template with the parameter table of src/runtime/params.def.

The page lists the same parameters the library, mpirun and hashi_info use, so
it cannot drift from them. The template's line consisting of @HASHI_PARAMS@ is
replaced by one roff .TP entry per parameter; @PACKAGE_VERSION@ is replaced by
--version. Any text in params.def this script cannot read is an error naming
the line, so a new parameter never silently disappears from the page.

Usage: params2man.py --def params.def --template hashi_info.1.in
                     --version 0.1.0 --output hashi_info.1
"""

import argparse
import os
import re
import sys

PARAM_TYPES = {"STRING", "INT", "SIZE", "BOOL", "ENUM"}

TOKEN_RE = re.compile(
    r"""
    (?P<space>[ \t\r\n]+)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<line_comment>//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[(),])
    """,
    re.VERBOSE | re.DOTALL,
)

C_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


class DefError(Exception):
    pass


def tokenize(text, path):
    """Yield (kind, value, line) for the tokens of params.def."""
    pos, line = 0, 1
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            snippet = text[pos:pos + 30].split("\n")[0]
            raise DefError(f"{path}:{line}: cannot read '{snippet}'")
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "string":
            body = value[1:-1]
            value = re.sub(r"\\(.)", lambda e: C_ESCAPES.get(e.group(1), e.group(1)), body)
        if kind not in ("space", "block_comment", "line_comment"):
            yield kind, value, line
        line += m.group(0).count("\n")
        pos = m.end()


def parse_params(path):
    """Return the HASHI_PARAM entries of params.def as dicts, in order."""
    with open(path, encoding="utf-8") as f:
        tokens = list(tokenize(f.read(), path))
    params, i = [], 0

    def expect(kind, what):
        nonlocal i
        if i >= len(tokens):
            raise DefError(f"{path}: unexpected end of file, expected {what}")
        tok = tokens[i]
        if kind == "punct" and tok[1] != what or kind != "punct" and tok[0] != kind:
            shown = f"'{what}'" if kind == "punct" else what
            raise DefError(f"{path}:{tok[2]}: expected {shown}, found '{tok[1]}'")
        i += 1
        return tok

    def string_or_null(what):
        """A string literal (adjacent literals concatenate) or NULL (None)."""
        nonlocal i
        if i < len(tokens) and tokens[i][0] == "ident" and tokens[i][1] == "NULL":
            i += 1
            return None
        parts = [expect("string", what)[1]]
        while i < len(tokens) and tokens[i][0] == "string":
            parts.append(tokens[i][1])
            i += 1
        return "".join(parts)

    while i < len(tokens):
        kind, value, line = tokens[i]
        if kind != "ident" or value != "HASHI_PARAM":
            raise DefError(f"{path}:{line}: expected HASHI_PARAM(...), found '{value}'")
        i += 1
        expect("punct", "(")
        name = expect("ident", "the parameter name")[1]
        expect("punct", ",")
        ptype_tok = expect("ident", "the parameter type")
        if ptype_tok[1] not in PARAM_TYPES:
            raise DefError(f"{path}:{ptype_tok[2]}: unknown type '{ptype_tok[1]}' "
                           f"(one of {', '.join(sorted(PARAM_TYPES))})")
        expect("punct", ",")
        default = string_or_null("the default value")
        expect("punct", ",")
        choices = string_or_null("the choices")
        expect("punct", ",")
        doc = string_or_null("the documentation line")
        expect("punct", ")")
        if default is None or doc is None:
            raise DefError(f"{path}:{line}: HASHI_{name} needs a default and a doc string")
        if ptype_tok[1] == "ENUM" and not choices:
            raise DefError(f"{path}:{line}: ENUM HASHI_{name} has no choices")
        params.append({"name": "HASHI_" + name, "type": ptype_tok[1].lower(),
                       "default": default, "choices": choices, "doc": doc})
    if not params:
        raise DefError(f"{path}: no HASHI_PARAM entries")
    return params


def roff_text(text):
    """Escape text for a roff line: backslashes, and control characters at the start."""
    text = text.replace("\\", "\\e").replace("\n", " ")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def roff_bold(text):
    return "\\fB" + roff_text(text).replace("-", "\\-") + "\\fR"


TYPE_WORDS = {
    "string": "a string",
    "int": "an integer",
    "size": "a size in bytes (suffixes k, m, g)",
    "bool": "a boolean (0/1, yes/no, true/false, on/off)",
    "enum": "one of",
}


def params_section(params):
    lines = []
    for p in params:
        lines.append(".TP")
        lines.append(".B " + roff_text(p["name"]))
        lines.append(roff_text(p["doc"]))
        lines.append(".br")
        if p["type"] == "enum":
            choices = ", ".join(roff_bold(c) for c in p["choices"].split(","))
            what = "One of " + choices
        else:
            what = TYPE_WORDS[p["type"]][0].upper() + TYPE_WORDS[p["type"]][1:]
        default = roff_bold(p["default"]) if p["default"] else "empty"
        lines.append(f"{what}; default {default}.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--def", dest="defs", required=True, help="src/runtime/params.def")
    ap.add_argument("--template", required=True, help="man page template (.1.in)")
    ap.add_argument("--version", required=True, help="package version for the page header")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()

    try:
        params = parse_params(args.defs)
    except (DefError, OSError) as e:
        sys.exit(f"params2man.py: {e}")

    with open(args.template, encoding="utf-8") as f:
        template = f.read()
    if template.count("\n@HASHI_PARAMS@\n") != 1:
        sys.exit(f"params2man.py: {args.template}: needs exactly one line '@HASHI_PARAMS@'")
    page = template.replace("\n@HASHI_PARAMS@\n", "\n" + params_section(params) + "\n")
    page = page.replace("@PACKAGE_VERSION@", args.version)

    # Write then rename: an interrupted build never leaves half a page behind.
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
