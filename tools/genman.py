#!/usr/bin/env python3
"""genman.py - the man pages, made from what the binary itself prints.

  tools/genman.py BINARY OUTDIR

writes OUTDIR/gpulog.1 (from `gpulog --help`), OUTDIR/gpulog-CMD.1 for each
command listed there (from `gpulog CMD --help`) and OUTDIR/gpulog.yaml.5
(from `gpulog config docs`, the generator of docs/configuration.md). The
help texts and the config key table in the C sources stay the one source;
this script only turns their layout into roff:

  usage: ...            (first block)        -> SYNOPSIS
  "word ...:" at col 0  (lower-case start)   -> .SS subsection
  "  -x, --opt ARG  text" (+ indented lines) -> .TP option items
  "  - text"                                 -> bullets
  "Exit status: ..." / "Signals: ..."        -> EXIT STATUS / SIGNALS sections
  other col-0 lines                          -> paragraphs
  other indented lines                       -> example lines (no fill)
"""
import os
import re
import subprocess
import sys
import time

SECTION_PARAS = {"Exit status": "EXIT STATUS", "Signals": "SIGNALS"}


def esc(s):
    """Roff-escapes plain text: backslashes, minus signs, leading dots."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return s


def line_safe(s):
    """A roff text line: one starting with . or ' would be a request."""
    return "\\&" + s if s[:1] in (".", "'") else s


def opt_tag(tag):
    """Bold option names, italic place-holders: '-f, --format F' -> roff."""
    out = []
    for tok in re.split(r"(\s+|,\s*|\[|\]|=|\|)", tag):
        if not tok:
            continue
        if re.fullmatch(r"-{1,2}[A-Za-z0-9][\w-]*|-", tok):
            out.append("\\fB" + esc(tok) + "\\fR")
        elif re.fullmatch(r"[A-Z][A-Z0-9_:]*(\.\.\.)?", tok):
            out.append("\\fI" + esc(tok) + "\\fR")
        else:
            out.append(esc(tok))
    return "".join(out)


def indent(s):
    return len(s) - len(s.lstrip(" "))


class Roff:
    """Collects the lines of one page."""

    def __init__(self):
        self.lines = []

    def req(self, r):
        self.lines.append(r)

    def text(self, s):
        self.lines.append(line_safe(esc(s.strip())))

    def raw(self, s):
        self.lines.append(line_safe(s))

    def out(self):
        return "\n".join(self.lines) + "\n"


def desc_column(lines):
    """The column where option descriptions start in a block of help lines:
    the most common start of the text after an option and its 2+ spaces."""
    counts = {}
    for ln in lines:
        m = re.match(r"(\s+-\S.*?\s{2,})\S", ln)
        if m:
            counts[len(m.group(1))] = counts.get(len(m.group(1)), 0) + 1
    return max(counts, key=lambda k: (counts[k], -k)) if counts else 0


def split_item(ln, col):
    """'  -f, --format F    text' -> ('-f, --format F', 'text')."""
    body = ln.strip()
    if col and len(ln) > col and ln[col - 1] == " " and ln[col] != " " \
            and not re.search(r"\S\s{2,}\S", ln[:col].strip()):
        return ln[:col].strip(), ln[col:].strip()
    m = re.match(r"(\S.*?)\s{2,}(\S.*)$", body)
    if m:
        return m.group(1), m.group(2)
    return body, ""


def render_help(text, r):
    """Turns a --help text (after its usage block) into roff sections."""
    lines = text.split("\n")
    col = desc_column(lines)
    i = 0
    state = None            # None, "item", "bullet", "example", "para"
    sub = None              # nested items inside an option's description
    section_open = False

    def close_sub():
        nonlocal sub
        if sub:
            r.req(".RE")
            sub = None

    while i < len(lines):
        prev = lines[i - 1].rstrip() if i else ""
        ln = lines[i].rstrip()
        i += 1
        if not ln.strip():
            close_sub()
            if state == "example":
                r.req(".fi")
                r.req(".RE")
            state = None
            continue
        ind = indent(ln)
        body = ln.strip()
        if ind == 0:
            if state == "example":
                r.req(".fi")
                r.req(".RE")
            close_sub()
            m = re.match(r"([A-Z][A-Za-z ]{0,20}): (.*)$", body)
            if m and m.group(1) in SECTION_PARAS:
                r.req(".SH " + SECTION_PARAS[m.group(1)])
                r.text(m.group(2))
                state = "para"
                section_open = True
                continue
            if state == "para" and prev.endswith(".") and re.match(r"[A-Z]", body):
                state = None      # a new sentence at column 0 after a full stop: new paragraph
            if section_open and state != "para":
                r.req(".SH NOTES")
                section_open = False
            if re.match(r"[a-z][\w ]*(\(|:$)", body) and state != "para":
                # a heading, possibly wrapped over lines up to the one ending in ':'
                head = body
                while not head.endswith(":") and i < len(lines) and lines[i].strip() \
                        and indent(lines[i]) == 0:
                    head += " " + lines[i].strip()
                    i += 1
                if head.endswith(":"):
                    r.req('.SS "' + esc(head[:1].upper() + head[1:-1]).replace('"', "") + '"')
                    state = None
                    continue
                r.req(".PP")
                r.text(head)
                state = "para"
                continue
            m = re.match(r"(\w+)\s{2,}(\S.*)$", body)
            if m and state != "para":
                r.req(".TP")
                r.raw("\\fB" + esc(m.group(1)) + "\\fR")
                r.text(m.group(2))
                state = "item"
                continue
            if re.match(r"[A-Z][A-Za-z ]{0,20}: ", body) or state != "para":
                r.req(".PP")
            r.text(body)
            state = "para"
            continue
        # indented line
        if state == "para" and section_open:
            r.text(body)
            continue
        if re.match(r"- \S", body):
            close_sub()
            r.req(".IP \\(bu 2")
            r.text(body[2:])
            state = "bullet"
            continue
        if state == "bullet" and not body.startswith("-"):
            r.text(body)
            continue
        is_opt = re.match(r"-(\S|\s{2,}|$)", body)
        is_word_item = state not in ("example",) and ind <= 2 \
            and re.match(r"[a-z][\w-]*\s{2,}\S", body)
        if is_opt or is_word_item:
            close_sub()
            tag, desc = split_item(ln, col)
            r.req(".TP")
            r.raw(opt_tag(tag) if is_opt else "\\fB" + esc(tag) + "\\fR")
            if desc:
                r.text(desc)
            state = "item"
            continue
        if state == "item" and ind > col and col and re.match(r"\S+\s{2,}\S", body):
            # a nested list inside an option's description (parse --format)
            if not sub:
                r.req(".RS")
                sub = True
            w, d = re.match(r"(\S+)\s{2,}(\S.*)$", body).groups()
            r.req(".TP")
            r.raw("\\fB" + esc(w) + "\\fR")
            r.text(d)
            continue
        if state == "item":
            if sub and ind <= col:
                close_sub()
                r.req(".IP")
            r.text(body)
            continue
        if state != "example":
            r.req(".RS 4")
            r.req(".nf")
            state = "example"
        r.raw(esc(body))
    close_sub()
    if state == "example":
        r.req(".fi")
        r.req(".RE")


def split_usage(text):
    """Separates the leading 'usage:' block from the rest of a help text."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("usage:"))
    end = start
    while end < len(lines) and lines[end].strip():
        end += 1
    usage = [l[len("usage: "):] if l.startswith("usage: ") else l[7:] for l in lines[start:end]]
    return lines[:start], usage, "\n".join(lines[end:])


def header(r, name, section, version, date, title):
    r.req('.\\" Generated by tools/genman.py from the output of the gpulog binary;')
    r.req('.\\" edit the help texts in cmd/*.c or the key table in core/config.c instead.')
    r.req('.TH "%s" "%s" "%s" "gpulog %s" "%s"' % (esc(name.upper()), section, date, version, title))
    r.req(".nh")
    r.req(".ad l")
    r.req(".SH NAME")


def synopsis(r, usage):
    r.req(".SH SYNOPSIS")
    r.req(".nf")
    for u in usage:
        m = re.match(r"(\s*)(gpulog(?: [a-z]+)?)(.*)$", u)
        if m:
            r.raw(m.group(1) + "\\fB" + esc(m.group(2)) + "\\fR" + opt_tag(m.group(3)))
        else:
            r.raw(opt_tag(u))
    r.req(".fi")


def run(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def md_inline(s):
    """Markdown inline markup of docs/configuration.md -> roff."""
    s = s.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("\\|", "|")
    out = []
    for part in re.split(r"(`[^`]*`)", s):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append("\\fB" + esc(part[1:-1]) + "\\fR")
        else:
            part = esc(part)
            part = re.sub(r"\*([^*]+)\*", r"\\fI\1\\fR", part)
            out.append(part)
    return "".join(out)


def render_markdown(md, r):
    """docs/configuration.md's subset of Markdown -> roff."""
    lines = md.split("\n")
    i = 0
    in_comment = False
    header_row = None
    while i < len(lines):
        ln = lines[i]
        i += 1
        if in_comment:
            in_comment = "-->" not in ln
            continue
        if ln.startswith("<!--"):
            in_comment = "-->" not in ln
            continue
        if ln.startswith("# "):
            continue
        if ln.startswith("## "):
            r.req(".SH " + esc(ln[3:].upper()))
            continue
        if ln.startswith("```"):
            r.req(".PP")
            r.req(".RS 4")
            r.req(".nf")
            while i < len(lines) and not lines[i].startswith("```"):
                r.raw(esc(lines[i]))
                i += 1
            i += 1
            r.req(".fi")
            r.req(".RE")
            continue
        if ln.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip())[1:-1]]
            if all(re.fullmatch(r"-+", c) for c in cells):
                continue
            if header_row is None:
                header_row = cells
                continue
            r.req(".TP")
            r.raw(md_inline(cells[0]))
            facts = ["%s: %s" % (h.lower(), md_inline(c)) for h, c in zip(header_row[1:-1], cells[1:-1])]
            r.raw(line_safe("; ".join(facts) + "."))
            r.req(".br")
            r.raw(line_safe(md_inline(cells[-1])))
            continue
        header_row = None
        if not ln.strip():
            continue
        m = re.match(r"(-|\d+\.) (.*)$", ln)
        if m:
            r.req(".IP \\(bu 2" if m.group(1) == "-" else ".IP %s 4" % m.group(1))
            r.raw(line_safe(md_inline(m.group(2))))
            while i < len(lines) and lines[i].startswith("   ") and lines[i].strip():
                r.raw(line_safe(md_inline(lines[i].strip())))
                i += 1
            continue
        r.req(".PP")
        r.raw(line_safe(md_inline(ln)))
        while i < len(lines) and lines[i].strip() and not re.match(r"(#|\||```|- |\d+\. )", lines[i]):
            r.raw(line_safe(md_inline(lines[i])))
            i += 1


def see_also(r, pages):
    r.req(".SH SEE ALSO")
    r.raw(",\n".join("\\fB%s\\fR(%s)" % (esc(n), s) for n, s in pages))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: genman.py BINARY OUTDIR")
    binary, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    version = run(binary, "--version").split("\n")[0].split()[-1]   # "gpulog X.Y.Z", then the librdkafka line
    date = time.strftime("%Y-%m-%d", time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or None))
    top = run(binary, "--help")
    first, usage, rest = split_usage(top)
    summary = first[0].split(" - ", 1)[1] if first and " - " in first[0] else "gpulog"
    commands = re.findall(r"^  ([a-z]+)\s{2,}(.*)$", rest, re.M)
    if not commands:
        sys.exit("genman.py: no command list in '%s --help'" % binary)
    cmd_pages = [("gpulog-" + c, "1") for c, _ in commands]
    written = []

    r = Roff()
    header(r, "gpulog", "1", version, date, "gpulog manual")
    r.raw("gpulog \\- " + esc(summary))
    synopsis(r, usage)
    r.req(".SH DESCRIPTION")
    r.raw("One binary with subcommands; each has its own page, "
          "\\fBgpulog\\-\\fIcommand\\fR(1), and answers \\fB\\-\\-help\\fR.")
    render_help(rest, r)
    r.req(".SH FILES")
    r.req(".TP")
    r.raw("\\fI/etc/gpulog/gpulog.yaml\\fR")
    r.raw("the configuration the systemd units name in \\fBGPULOG_CONFIG\\fR; see \\fBgpulog.yaml\\fR(5).")
    see_also(r, cmd_pages + [("gpulog.yaml", "5")])
    written.append(("gpulog.1", r.out()))

    for name, summ in commands:
        text = run(binary, name, "--help")
        first, usage, rest = split_usage(text)
        r = Roff()
        header(r, "gpulog-" + name, "1", version, date, "gpulog manual")
        r.raw("gpulog\\-%s \\- %s" % (esc(name), esc(summ)))
        synopsis(r, usage)
        r.req(".SH DESCRIPTION")
        render_help(rest, r)
        see_also(r, [("gpulog", "1")] + [p for p in cmd_pages if p[0] != "gpulog-" + name]
                 + [("gpulog.yaml", "5")])
        written.append(("gpulog-%s.1" % name, r.out()))

    r = Roff()
    header(r, "gpulog.yaml", "5", version, date, "gpulog manual")
    r.raw("gpulog.yaml \\- configuration file of gpulog")
    r.req(".SH DESCRIPTION")
    render_markdown(run(binary, "config", "docs"), r)
    r.req(".SH FILES")
    r.req(".TP")
    r.raw("\\fI/etc/gpulog/gpulog.yaml\\fR")
    r.raw("the file the systemd units read (installed as an example).")
    see_also(r, [("gpulog", "1"), ("gpulog-config", "1")])
    written.append(("gpulog.yaml.5", r.out()))

    for fname, body in written:
        with open(os.path.join(outdir, fname), "w") as f:
            f.write(body)
    print(" ".join(f for f, _ in written))


if __name__ == "__main__":
    main()
