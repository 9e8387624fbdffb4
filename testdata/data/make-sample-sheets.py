#!/usr/bin/env python3
"""Writes sample-sheets.xlsx: a workbook of three worksheets, made with Python's standard
library only (zipfile and hand-written SpreadsheetML, ECMA-376 part 1), so that the tests of
the xlsx reader (excelize) read a file no excelize code wrote.

    python3 testdata/data/make-sample-sheets.py > testdata/data/sample-sheets.xlsx

The sheets, in workbook order: "Books" (the first), "Costs", "Notes & ideas". Cells use
shared strings, inline strings, numbers and booleans. The zip entries carry a fixed date so
that the output is byte-identical from run to run.
"""
import io
import sys
import zipfile
from xml.sax.saxutils import escape

SHEETS = [
    ("Books", [["id", "title", "year"], [1, "The Hobbit", 1937], [2, "Cien años de soledad", 1967]]),
    ("Costs", [["item", "cents", "paid"], ["paper", 1250, True], ["ink", 899, False], ["postage", 310, True]]),
    ("Notes & ideas", [["note"], ["日本語のメモ"], ['"quoted", with a comma']]),
]

shared = []  # shared strings, in first-use order


def sst(s):
    if s not in shared:
        shared.append(s)
    return shared.index(s)


def col(i):
    return chr(ord("A") + i)


def sheet_xml(rows, inline):
    out = ['<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
           '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>']
    for r, row in enumerate(rows, 1):
        out.append('<row r="%d">' % r)
        for c, v in enumerate(row):
            ref = "%s%d" % (col(c), r)
            if isinstance(v, bool):
                out.append('<c r="%s" t="b"><v>%d</v></c>' % (ref, v))
            elif isinstance(v, (int, float)):
                out.append('<c r="%s"><v>%s</v></c>' % (ref, v))
            elif inline:
                out.append('<c r="%s" t="inlineStr"><is><t>%s</t></is></c>' % (ref, escape(v)))
            else:
                out.append('<c r="%s" t="s"><v>%d</v></c>' % (ref, sst(v)))
        out.append("</row>")
    out.append("</sheetData></worksheet>")
    return "".join(out)


def main():
    parts = {}
    for i, (name, rows) in enumerate(SHEETS, 1):
        parts["xl/worksheets/sheet%d.xml" % i] = sheet_xml(rows, inline=(i == 3))
    parts["[Content_Types].xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        + "".join('<Override PartName="/xl/worksheets/sheet%d.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' % i
                  for i in range(1, len(SHEETS) + 1))
        + '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
        "</Types>")
    parts["_rels/.rels"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>")
    parts["xl/workbook.xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
        + "".join('<sheet name="%s" sheetId="%d" r:id="rId%d"/>' % (escape(name, {'"': "&quot;"}), i, i)
                  for i, (name, _) in enumerate(SHEETS, 1))
        + "</sheets></workbook>")
    n = len(SHEETS)
    parts["xl/_rels/workbook.xml.rels"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join('<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet%d.xml"/>' % (i, i)
                  for i in range(1, n + 1))
        + '<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>' % (n + 1)
        + '<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>' % (n + 2)
        + "</Relationships>")
    parts["xl/sharedStrings.xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="%d" uniqueCount="%d">' % (len(shared), len(shared))
        + "".join("<si><t>%s</t></si>" % escape(s) for s in shared)
        + "</sst>")
    parts["xl/styles.xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
        '<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
        '<borders count="1"><border/></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
        "</styleSheet>")
    order = ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels"] + \
        ["xl/worksheets/sheet%d.xml" % i for i in range(1, n + 1)] + ["xl/sharedStrings.xml", "xl/styles.xml"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, parts[name].encode("utf-8"))
    sys.stdout.buffer.write(buf.getvalue())


if __name__ == "__main__":
    main()
