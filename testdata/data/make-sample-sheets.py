#!/usr/bin/env python3
"""Writes sample-sheets.xlsx: a workbook of three worksheets, made with Python's standard
library only (zipfile and hand-written SpreadsheetML, ECMA-376 part 1), so that the tests of
the xlsx reader (excelize) read a file no excelize code wrote.

    python3 testdata/data/make-sample-sheets.py > testdata/data/sample-sheets.xlsx
    python3 testdata/data/make-sample-sheets.py extras > testdata/data/sample-extras.xlsx

With "extras", one sheet "Costs" whose total is a formula (with its cached value and
xl/calcChain.xml), whose first item is a hyperlink, and a picture in xl/media.

The sheets, in workbook order: "Books" (the first), "Costs", "Notes & ideas". Cells use
shared strings, inline strings, numbers and booleans. The zip entries carry a fixed date so
that the output is byte-identical from run to run.
"""
import io
import os
import sys
import zipfile
from xml.sax.saxutils import escape

EXTRAS = len(sys.argv) > 1 and sys.argv[1] == "extras"

SHEETS = [
    ("Books", [["id", "title", "year"], [1, "The Hobbit", 1937], [2, "Cien años de soledad", 1967]]),
    ("Costs", [["item", "cents", "paid"], ["paper", 1250, True], ["ink", 899, False], ["postage", 310, True]]),
    ("Notes & ideas", [["note"], ["日本語のメモ"], ['"quoted", with a comma']]),
]

if EXTRAS:
    SHEETS = [("Costs", [["item", "cents"], ["paper", 1250], ["ink", 899], ["total", ("SUM(B2:B3)", 2149)]])]

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
            if isinstance(v, tuple):
                out.append('<c r="%s"><f>%s</f><v>%s</v></c>' % (ref, escape(v[0]), v[1]))
            elif isinstance(v, bool):
                out.append('<c r="%s" t="b"><v>%d</v></c>' % (ref, v))
            elif isinstance(v, (int, float)):
                out.append('<c r="%s"><v>%s</v></c>' % (ref, v))
            elif inline:
                out.append('<c r="%s" t="inlineStr"><is><t>%s</t></is></c>' % (ref, escape(v)))
            else:
                out.append('<c r="%s" t="s"><v>%d</v></c>' % (ref, sst(v)))
        out.append("</row>")
    out.append("</sheetData>")
    if EXTRAS:
        out.append('<hyperlinks><hyperlink xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" ref="A2" r:id="rIdLink1"/></hyperlinks>')
    out.append("</worksheet>")
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
    if EXTRAS:
        parts["xl/worksheets/_rels/sheet1.xml.rels"] = (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rIdLink1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/paper" TargetMode="External"/>'
            "</Relationships>")
        parts["xl/calcChain.xml"] = (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<calcChain xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><c r="B4" i="1"/></calcChain>')
        parts["xl/media/image1.png"] = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "images", "sample.png"), "rb").read()
        parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
            "</Types>",
            '<Default Extension="png" ContentType="image/png"/>'
            '<Override PartName="/xl/calcChain.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.calcChain+xml"/></Types>')
        parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
            "</Relationships>",
            '<Relationship Id="rIdCalc" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/calcChain" Target="calcChain.xml"/></Relationships>')
    order = ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels"] + \
        ["xl/worksheets/sheet%d.xml" % i for i in range(1, n + 1)] + ["xl/sharedStrings.xml", "xl/styles.xml"] + \
        sorted(k for k in parts if k.startswith(("xl/worksheets/_rels/", "xl/calcChain", "xl/media/")))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            data = parts[name]
            z.writestr(info, data if isinstance(data, bytes) else data.encode("utf-8"))
    sys.stdout.buffer.write(buf.getvalue())


if __name__ == "__main__":
    main()
