package convert

import (
	"testing"
)

import ()

func TestSniff(t *testing.T) {
	tests := []struct {
		data     string
		id, name string
	}{
		{"\x89PNG\r\n\x1a\nrest", "png", "PNG"},
		{"\xff\xd8\xff\xe0", "jpeg", "JPEG"},
		{"GIF89a...", "gif", "GIF"},
		{"GIF87a...", "gif", "GIF"},
		{"BM....", "bmp", "BMP"},
		{"II*\x00\x08\x00", "tiff", "TIFF"},
		{"MM\x00*\x00\x00", "tiff", "TIFF"},
		{"RIFF\x10\x00\x00\x00WEBPVP8 ", "webp", "WebP"},
		{"RIFF\x10\x00\x00\x00WAVEfmt ", "wav", "WAV"},
		{"%PDF-1.7\n", "pdf", "PDF"},
		{"PK\x03\x04", "zip", "ZIP"},
		{"fLaC\x00", "flac", "FLAC"},
		{"ID3\x04", "mp3", "MP3"},
		{"\xff\xfb\x90\x00", "mp3", "MP3"},
		{"\x1f\x8b\x08", "", "gzip"},
		{"\x00\x00\x00\x1cftypavif", "avif", "AVIF"},
		{"<!DOCTYPE html><html>", "html", "HTML"},
		{"  <html lang=en>", "html", "HTML"},
		{"<?xml version=\"1.0\"?><svg>", "", "SVG"},
		{"name,age\nbob,3\n", "", "text"},
		{"héllo wörld", "", "text"},
		{"\x00\x01\x02\x03\x04", "", "unrecognised data"},
		{"", "", "an empty file"},
	}
	for _, tt := range tests {
		id, name := Sniff([]byte(tt.data))
		if id != tt.id || name != tt.name {
			t.Errorf("sniff(%q) = %q, %q; want %q, %q", tt.data, id, name, tt.id, tt.name)
		}
	}
}
