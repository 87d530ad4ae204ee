#!/usr/bin/env python3
"""Generate Hashi's MPI bindings from the one function list.

Input:  src/mpi/functions.list  (one C declaration per line, the standard ABI's
        exact signatures) and include/mpi.h.in (the public header without
        prototypes, with a line reading @HASHI_MPI_PROTOTYPES@).
Output: include/mpi.h           mpi.h.in with the MPI_ and PMPI_ prototypes
        src/mpi/gen_impl.h      the hashi_impl_<Name> prototype of every function
        src/mpi/gen_bindings.c  PMPI_<Name> entry points, weak MPI_<Name> aliases,
                                the "not implemented yet" fallbacks, the
                                MPI_THREAD_MULTIPLE lock around each call
                                (docs/threads.md) and the hashi_bindings[] table

Any line the parser does not understand stops the build with its line number:
a silently skipped declaration would be a missing symbol in the ABI.
Standard library only; runs on Python 3.7+.
"""

import argparse
import os
import re
import sys
import tempfile

PLACEHOLDER = "@HASHI_MPI_PROTOTYPES@"

# Handle types and their null constants: the neutral value returned by a
# handle-returning function (MPI_Comm_fromint ...) that is not implemented.
NULL_HANDLE = {
    "MPI_Comm": "MPI_COMM_NULL",
    "MPI_Datatype": "MPI_DATATYPE_NULL",
    "MPI_Errhandler": "MPI_ERRHANDLER_NULL",
    "MPI_File": "MPI_FILE_NULL",
    "MPI_Group": "MPI_GROUP_NULL",
    "MPI_Info": "MPI_INFO_NULL",
    "MPI_Message": "MPI_MESSAGE_NULL",
    "MPI_Op": "MPI_OP_NULL",
    "MPI_Request": "MPI_REQUEST_NULL",
    "MPI_Session": "MPI_SESSION_NULL",
    "MPI_Win": "MPI_WIN_NULL",
}

# Neutral values of the other non-int return types.
NEUTRAL_SCALAR = {
    "double": "0.0",
    "MPI_Aint": "0",
    "MPI_Count": "0",
    "MPI_Offset": "0",
    "MPI_Fint": "0",
}

# The object an unsupported call reports its error on, by priority: the first
# by-value parameter of the first type in this list that the function has.
OBJECT_KINDS = (
    ("MPI_Comm", "HASHI_OBJ_COMM"),
    ("MPI_Win", "HASHI_OBJ_WIN"),
    ("MPI_File", "HASHI_OBJ_FILE"),
    ("MPI_Session", "HASHI_OBJ_SESSION"),
)

# Words that can only be part of a type, never a parameter's name.
TYPE_WORDS = {
    "const", "volatile", "restrict", "struct", "union", "enum", "signed",
    "unsigned", "short", "long", "int", "char", "float", "double", "void",
    "_Bool",
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
DECL_RE = re.compile(
    r"^(?P<ret>[A-Za-z_][A-Za-z0-9_ \t]*?)\s*\b(?P<name>" + IDENT + r")\s*"
    r"\((?P<params>.*)\)\s*;\s*(?P<comment>/\*.*?\*/)?\s*$")


class ListError(Exception):
    """A problem in functions.list, reported with its line number."""

    def __init__(self, lineno, message):
        super().__init__(message)
        self.lineno = lineno
        self.message = message


class Param:
    def __init__(self, text, name, base_type, is_pointer_or_array):
        self.text = text              # the declaration as written
        self.name = name
        self.base_type = base_type    # type with qualifiers and spaces removed
        self.by_value = not is_pointer_or_array


class Function:
    def __init__(self, lineno, ret, name, params, variadic, comment, section):
        self.lineno = lineno
        self.ret = ret
        self.name = name              # MPI_Send
        self.stem = name[len("MPI_"):]  # Send
        self.params = params          # [Param]
        self.variadic = variadic
        self.comment = comment
        self.section = section        # the last '#' comment seen, if new

    @property
    def pmpi(self):
        return "P" + self.name

    @property
    def impl(self):
        return "hashi_impl_" + self.stem

    def param_list(self, with_varargs=True):
        parts = [p.text for p in self.params]
        if self.variadic and with_varargs:
            parts.append("...")
        return ", ".join(parts) if parts else "void"

    def arg_list(self):
        return ", ".join(p.name for p in self.params)


def split_params(text, lineno):
    """Split a parameter list at its top-level commas."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise ListError(lineno, "unbalanced brackets in the parameter list")
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ListError(lineno, "unbalanced brackets in the parameter list")
    parts.append("".join(current).strip())
    return parts


def parse_param(text, lineno, index):
    """Find a parameter's name and the shape of its type."""
    where = "parameter %d ('%s')" % (index, text)
    if not text:
        raise ListError(lineno, "empty %s" % where)
    fnptr = re.search(r"\(\s*\*\s*(" + IDENT + r")\s*\)", text)
    if fnptr:  # a function pointer written as a declarator: void (*fn)(int)
        return Param(text, fnptr.group(1), "function-pointer", True)

    arrays = re.search(r"(\s*\[[^\]]*\])+\s*$", text)
    body = text[:arrays.start()] if arrays else text
    match = re.match(r"^(?P<type>.*?)(?P<name>" + IDENT + r")\s*$", body)
    if not match:
        raise ListError(lineno, "%s has no name: every parameter must be named "
                        "(the generated wrapper passes it on by name)" % where)
    type_part, name = match.group("type"), match.group("name")
    type_words = re.findall(IDENT, type_part)
    real_type_words = [w for w in type_words if w not in ("const", "volatile", "restrict")]
    if (not real_type_words or name in TYPE_WORDS or name.startswith("MPI_")
            or name.startswith("PMPI_")):
        raise ListError(lineno, "%s has no name: every parameter must be named "
                        "(the generated wrapper passes it on by name)" % where)
    if re.search(r"[^A-Za-z0-9_\s*]", type_part):
        raise ListError(lineno, "unsupported declarator in %s" % where)
    is_indirect = "*" in type_part or arrays is not None
    return Param(text.strip(), name, "".join(real_type_words), is_indirect)


def parse_line(line, lineno, section):
    code = line.strip()
    match = DECL_RE.match(code)
    if not match:
        raise ListError(lineno, "not a one-line C function declaration "
                        "('<type> MPI_Name(<params>);')")
    ret = " ".join(match.group("ret").split())
    name = match.group("name")
    if name.startswith("PMPI_"):
        raise ListError(lineno, "%s: list the MPI_ name only; PMPI_ twins are derived" % name)
    if not name.startswith("MPI_") or name == "MPI_":
        raise ListError(lineno, "%s: function names must start with MPI_" % name)
    if ret != "int" and ret not in NULL_HANDLE and ret not in NEUTRAL_SCALAR:
        raise ListError(lineno, "%s: return type '%s' has no known neutral value "
                        "(add it to gen_bindings.py)" % (name, ret))

    raw = match.group("params").strip()
    params, variadic = [], False
    if raw != "void":
        pieces = split_params(raw, lineno)
        for index, piece in enumerate(pieces, 1):
            if piece == "...":
                if index != len(pieces):
                    raise ListError(lineno, "'...' must be the last parameter")
                if index == 1:
                    raise ListError(lineno, "a variadic function needs a named parameter")
                variadic = True
                continue
            params.append(parse_param(piece, lineno, index))
    seen = set()
    for p in params:
        if p.name in seen:
            raise ListError(lineno, "parameter name '%s' used twice" % p.name)
        seen.add(p.name)
    return Function(lineno, ret, name, params, variadic, match.group("comment"), section)


def parse_list(path):
    functions, names = [], {}
    section = None
    with open(path, encoding="utf-8") as stream:
        for lineno, line in enumerate(stream, 1):
            text = line.strip()
            if not text:
                continue
            if text.startswith("#"):
                title = text.lstrip("#").strip().strip("-").strip()
                section = title or section
                continue
            fn = parse_line(line, lineno, section)
            section = None
            if fn.name in names:
                raise ListError(lineno, "%s already declared on line %d" % (fn.name, names[fn.name]))
            names[fn.name] = lineno
            functions.append(fn)
    if not functions:
        raise ListError(0, "no functions declared")
    unknown = sorted(UNLOCKED - set(names))
    if unknown:  # a misspelt name would silently take the lock
        raise ListError(0, "gen_bindings.py's UNLOCKED names functions not in the list: %s"
                        % ", ".join(unknown))
    return functions


def error_object(fn):
    for type_name, kind in OBJECT_KINDS:
        for p in fn.params:
            if p.by_value and p.base_type == type_name:
                return kind, p.name
    return "HASHI_OBJ_NONE", "NULL"


def neutral_value(fn):
    """What an unsupported function that does not return an error code returns."""
    if fn.ret in NULL_HANDLE:
        return NULL_HANDLE[fn.ret]
    if fn.ret in NEUTRAL_SCALAR:
        return NEUTRAL_SCALAR[fn.ret]
    if fn.name.endswith("_toint") and len(fn.params) == 1 and fn.params[0].base_type in NULL_HANDLE:
        # The int is a handle's integer value, not an error code.
        return "(int)(intptr_t)" + NULL_HANDLE[fn.params[0].base_type]
    return None  # an error-code returning function


GENERATED_NOTICE = ("Generated by src/mpi/gen_bindings.py from src/mpi/functions.list: "
                    "do not edit.")


def render_prototypes(functions):
    out = ["/* " + GENERATED_NOTICE + "\n * Every function is declared with its "
           "MPI_ name and its PMPI_ (profiling) twin. */"]
    for fn in functions:
        if fn.section:
            out.append("")
            out.append("/* %s */" % fn.section)
        tail = " " + fn.comment if fn.comment else ""
        out.append("%s %s(%s);%s" % (fn.ret, fn.name, fn.param_list(), tail))
        out.append("%s %s(%s);" % (fn.ret, fn.pmpi, fn.param_list()))
    return "\n".join(out) + "\n"


def render_header(template_path, functions):
    with open(template_path, encoding="utf-8") as stream:
        lines = stream.read().splitlines(True)
    hits = [i for i, line in enumerate(lines) if line.strip() == PLACEHOLDER]
    if len(hits) != 1:
        raise ListError(0, "%s must contain exactly one line reading %s (found %d)"
                        % (template_path, PLACEHOLDER, len(hits)))
    stray = [i + 1 for i, line in enumerate(lines) if PLACEHOLDER in line and i != hits[0]]
    if stray:
        raise ListError(0, "%s: %s appears inside other text on line %d"
                        % (template_path, PLACEHOLDER, stray[0]))
    lines[hits[0]] = render_prototypes(functions)
    return "".join(lines)


def render_impl_header(functions):
    out = [
        "/* " + GENERATED_NOTICE + " */",
        "/*",
        " * The implementation of MPI_<Name> is hashi_impl_<Name>, with exactly the",
        " * standard's signature. Implementation files include this header so that a",
        " * wrong signature is a compile error. A function nobody defines yet stays a",
        " * weak undefined reference, and its PMPI_ entry point reports",
        " * \"not implemented\" through hashi_err_unsupported().",
        " */",
        "#ifndef HASHI_MPI_GEN_IMPL_H",
        "#define HASHI_MPI_GEN_IMPL_H",
        "",
        "#include <mpi.h>",
        "",
    ]
    for fn in functions:
        if fn.variadic:
            out.append("/* Variadic in the standard: the implementation receives the named "
                       "parameters only. */")
        out.append("%s %s(%s);" % (fn.ret, fn.impl, fn.param_list(with_varargs=False)))
    out += ["", "#endif /* HASHI_MPI_GEN_IMPL_H */", ""]
    return "\n".join(out)


# Calls that never take the MPI_THREAD_MULTIPLE lock (docs/threads.md): the
# ones the standard allows before MPI_Init or after MPI_Finalize and that read
# only what never changes while MPI runs (clocks, versions, the init state, the
# thread level and main thread); the Init calls, which run before the lock is
# on and set it up; and MPI_Abort, which must end the job even while another
# thread holds the lock (a user callback that never returns).
UNLOCKED = {
    "MPI_Wtime", "MPI_Wtick", "MPI_Initialized", "MPI_Finalized", "MPI_Query_thread",
    "MPI_Is_thread_main", "MPI_Get_version", "MPI_Get_library_version",
    "MPI_Init", "MPI_Init_thread", "MPI_Abort",
}


def render_entry_point(fn):
    kind, handle = error_object(fn)
    neutral = neutral_value(fn)
    params = fn.param_list(with_varargs=False)
    args = fn.arg_list()
    out = []
    if fn.variadic:
        out.append("/* %s is variadic: the implementation gets the named parameters only; "
                   "the rest are ignored. */" % fn.name)
    out.append("extern %s %s(%s) HASHI_IMPL_REF;" % (fn.ret, fn.impl, params))
    locked = fn.name not in UNLOCKED
    body = fn.pmpi if not locked else "body_" + fn.stem
    if locked:
        # The call itself, inlined into the entry point's unlocked path.
        out.append("static inline %s %s(%s)" % (fn.ret, body, params))
    else:
        out.append("#pragma weak %s = %s" % (fn.name, fn.pmpi))
        out.append("HASHI_EXPORT %s %s(%s)" % (fn.ret, fn.pmpi, fn.param_list()))
    out.append("{")
    out.append("    if (%s)" % fn.impl)
    out.append("        return %s(%s);" % (fn.impl, args))
    call = 'hashi_err_unsupported("%s", %s, %s)' % (fn.name, kind, handle)
    if neutral is None:
        out.append("    return %s;" % call)
    else:
        out.append("    (void)%s;" % call)
        out.append("    return %s;" % neutral)
    out.append("}")
    if locked:
        # Out of line: a program that is not MULTIPLE pays one predictable
        # branch and no code in its path.
        out.append("static HASHI_COLD %s locked_%s(%s)" % (fn.ret, fn.stem, params))
        out.append("{")
        out.append("    hashi_mt_enter();")
        out.append("    %s hashi_result = %s(%s);" % (fn.ret, body, args))
        out.append("    hashi_mt_exit();")
        out.append("    return hashi_result;")
        out.append("}")
        out.append("#pragma weak %s = %s" % (fn.name, fn.pmpi))
        out.append("HASHI_EXPORT %s %s(%s)" % (fn.ret, fn.pmpi, fn.param_list()))
        out.append("{")
        out.append("    if (__builtin_expect(hashi_mt_locking, 0))")
        out.append("        return locked_%s(%s);" % (fn.stem, args))
        out.append("    return %s(%s);" % (body, args))
        out.append("}")
    return "\n".join(out)


def render_bindings(functions):
    out = [
        "/* " + GENERATED_NOTICE + " */",
        "/*",
        " * One entry point per function of the standard ABI. PMPI_<Name> is the",
        " * real symbol; MPI_<Name> is a weak alias to it, so a profiling library",
        " * can define MPI_<Name> and still reach the implementation through PMPI_.",
        " * The entry point calls hashi_impl_<Name> when some file of the library",
        " * defines it, else raises MPI_ERR_UNSUPPORTED_OPERATION-style errors",
        " * through hashi_err_unsupported() on the call's object. Under",
        " * MPI_THREAD_MULTIPLE the call runs inside the global lock (mpi/thread.h).",
        " */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "/* The MPI names must be exported although the library is built with",
        " * -fvisibility=hidden: the weak MPI_ aliases take their visibility from",
        " * these declarations. */",
        "#pragma GCC visibility push(default)",
        "#include <mpi.h>",
        "#pragma GCC visibility pop",
        "",
        "#include \"mpi/bindings.h\"",
        "#include \"mpi/errors.h\"",
        "#include \"mpi/thread.h\"",
        "#include \"runtime/export.h\"",
        "",
        "/* A weak, hidden reference: it is NULL when no file defines the function,",
        " * and it never becomes a dynamic symbol another library could satisfy. */",
        "#define HASHI_IMPL_REF __attribute__((weak, visibility(\"hidden\")))",
        "/* The locked path of MPI_THREAD_MULTIPLE, kept out of the hot text. */",
        "#define HASHI_COLD __attribute__((cold, noinline))",
        "",
    ]
    for fn in functions:
        out.append(render_entry_point(fn))
        out.append("")
    out.append("/* Every function of the list and its implementation (NULL: not yet).")
    out.append(" * Casting through void (*)(void) is the one function-pointer cast")
    out.append(" * -Wcast-function-type accepts; callers only test and print it. */")
    out.append("HASHI_EXPORT const struct hashi_binding hashi_bindings[] = {")
    for fn in functions:
        out.append('    {"%s", (hashi_fn)%s},' % (fn.name, fn.impl))
    out.append("};")
    out.append("HASHI_EXPORT const size_t hashi_bindings_count =")
    out.append("    sizeof hashi_bindings / sizeof hashi_bindings[0];")
    out.append("")
    return "\n".join(out)


def write_file(path, text):
    """Write through a temporary file so a failed run never leaves half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".gen-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", required=True, help="src/mpi/functions.list")
    parser.add_argument("--header-in", required=True, help="include/mpi.h.in")
    parser.add_argument("--out-header", required=True, help="include/mpi.h to write")
    parser.add_argument("--out-bindings", required=True, help="src/mpi/gen_bindings.c to write")
    parser.add_argument("--out-impl", required=True, help="src/mpi/gen_impl.h to write")
    args = parser.parse_args(argv)

    try:
        functions = parse_list(args.list)
    except ListError as err:
        where = "%s:%d" % (args.list, err.lineno) if err.lineno else args.list
        sys.stderr.write("%s: error: %s\n" % (where, err.message))
        return 1
    except OSError as err:
        sys.stderr.write("gen_bindings.py: cannot read %s: %s\n" % (args.list, err.strerror))
        return 1

    try:
        header = render_header(args.header_in, functions)
    except ListError as err:
        sys.stderr.write("gen_bindings.py: error: %s\n" % err.message)
        return 1
    except OSError as err:
        sys.stderr.write("gen_bindings.py: cannot read %s: %s\n" % (args.header_in, err.strerror))
        return 1

    try:
        write_file(args.out_header, header)
        write_file(args.out_impl, render_impl_header(functions))
        write_file(args.out_bindings, render_bindings(functions))
    except OSError as err:
        sys.stderr.write("gen_bindings.py: cannot write %s: %s\n" % (err.filename, err.strerror))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
