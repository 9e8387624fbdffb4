#!/usr/bin/env python3
"""Writes sample-cjk.md, sample-cjk.html and sample-cjk.docx: a heading and paragraphs in
Chinese, Japanese and Korean, with Python's
standard library only (the DOCX is a minimal WordprocessingML package).

    python3 testdata/documents/make-sample-cjk.py
"""
import html
import os
import zipfile

here = os.path.dirname(os.path.abspath(__file__))
title = "多言語 sample"
paras = [
    "Chinese: 中文文本，简体与繁體。",
    "Japanese: ひらがな、カタカナ、日本語の漢字。",
    "Korean: 한국어 텍스트와 한글.",
]

with open(os.path.join(here, "sample-cjk.md"), "w", encoding="utf-8") as f:
    f.write("# " + title + "\n\n" + "\n\n".join(paras) + "\n")

with open(os.path.join(here, "sample-cjk.html"), "w", encoding="utf-8") as f:
    f.write('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>' + html.escape(title) + "</title></head><body>\n<h1>"
            + html.escape(title) + "</h1>\n" + "".join("<p>" + html.escape(p) + "</p>\n" for p in paras) + "</body></html>\n")

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
def para(text, style=None):
    ppr = '<w:pPr><w:pStyle w:val="%s"/></w:pPr>' % style if style else ""
    return '<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>' % (ppr, html.escape(text, quote=False))
document = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="%s"><w:body>' % W
            + para(title, "Heading1") + "".join(para(p) for p in paras) + "</w:body></w:document>")
styles = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:styles xmlns:w="%s">'
          '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style></w:styles>' % W)
files = {
    "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/></Types>',
    "_rels/.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    "word/_rels/document.xml.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>',
    "word/document.xml": document,
    "word/styles.xml": styles,
}
with zipfile.ZipFile(os.path.join(here, "sample-cjk.docx"), "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in files.items():
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data.encode("utf-8"))
