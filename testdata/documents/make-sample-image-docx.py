#!/usr/bin/env python3
"""Writes sample-image.docx: sample.docx with a picture (word/media/image1.png, the PNG sample,
drawn inline after the first paragraph), with Python's standard library only.

    python3 testdata/documents/make-sample-image-docx.py
"""
import zipfile

SRC, DST = "testdata/documents/sample.docx", "testdata/documents/sample-image.docx"
png = open("testdata/images/sample.png", "rb").read()
drawing = (
    '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing">'
    '<wp:extent cx="609600" cy="457200"/><wp:docPr id="1" name="Picture 1"/>'
    '<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
    '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
    '<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture">'
    '<pic:nvPicPr><pic:cNvPr id="1" name="image1.png"/><pic:cNvPicPr/></pic:nvPicPr>'
    '<pic:blipFill><a:blip xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:embed="rIdImage1"/></pic:blipFill>'
    '<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="609600" cy="457200"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr>'
    '</pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>')
with zipfile.ZipFile(SRC) as src, zipfile.ZipFile(DST, "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename == "word/document.xml":
            s = data.decode("utf-8")
            i = s.index("</w:p>") + len("</w:p>")
            data = (s[:i] + drawing + s[i:]).encode("utf-8")
        elif info.filename == "word/_rels/document.xml.rels":
            s = data.decode("utf-8")
            data = s.replace("</Relationships>",
                             '<Relationship Id="rIdImage1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/></Relationships>').encode("utf-8")
        elif info.filename == "[Content_Types].xml":
            s = data.decode("utf-8")
            if 'Extension="png"' not in s:
                s = s.replace("<Default ", '<Default Extension="png" ContentType="image/png"/><Default ', 1)
            data = s.encode("utf-8")
        out = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
        out.compress_type = zipfile.ZIP_DEFLATED
        dst.writestr(out, data)
    out = zipfile.ZipInfo("word/media/image1.png", date_time=(2026, 1, 1, 0, 0, 0))
    dst.writestr(out, png)
