#!/usr/bin/env python3
"""Writes sample-text.svg, a 320x240 drawing with a title and labels (SVG text), and, when
Debian's rsvg-convert (librsvg2-bin) is installed, its reference rendering sample-text.rsvg.png.
   python3 make-sample-text-svg.py
The SVG is written with Python's standard library only; the reference comes from librsvg."""
import os, shutil, subprocess

here = os.path.dirname(os.path.abspath(__file__))
svg = """<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="320" height="240" viewBox="0 0 320 240">
  <title>Quarterly sales</title>
  <rect x="0" y="0" width="320" height="240" fill="#ffffff"/>
  <text x="160" y="36" font-family="sans-serif" font-size="26" font-weight="bold" text-anchor="middle" fill="#1a237e">Quarterly sales</text>
  <g transform="translate(40 60)">
    <rect x="0" y="100" width="40" height="50" fill="#42a5f5"/>
    <rect x="60" y="70" width="40" height="80" fill="#66bb6a"/>
    <rect x="120" y="40" width="40" height="110" fill="#ffa726"/>
    <rect x="180" y="10" width="40" height="140" fill="#ef5350"/>
    <line x1="-5" y1="150" x2="235" y2="150" stroke="#333333" stroke-width="2"/>
    <text y="170" font-family="sans-serif" font-size="14" fill="#333333">
      <tspan x="8">Q1</tspan><tspan x="68">Q2</tspan><tspan x="128">Q3</tspan><tspan x="188">Q4</tspan>
    </text>
  </g>
  <text x="310" y="232" font-size="11" font-style="italic" text-anchor="end" fill="#555555" style="font-family: serif">Source: <tspan font-weight="bold">internal</tspan></text>
</svg>
"""
path = os.path.join(here, "sample-text.svg")
with open(path, "w", encoding="utf-8") as f:
    f.write(svg)
if shutil.which("rsvg-convert"):
    subprocess.run(["rsvg-convert", "-o", os.path.join(here, "sample-text.rsvg.png"), path], check=True)
