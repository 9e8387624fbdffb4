package audio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert"
)

// What an audio conversion cannot keep is reported as a warning on the job (issue 23).
// Channels, sample rate and integer bit depth are kept (a FLAC target refuses what it cannot
// hold, with a message). Lost, and so reported:
//
//   - tags and pictures: WAV LIST/id3 chunks, FLAC VORBIS_COMMENT, PICTURE and CUESHEET
//     blocks, MP3 ID3 tags and Ogg Vorbis comments are not written (metadata_dropped);
//   - float samples: 32/64-bit float WAV becomes 24-bit integers, clipping beyond full scale
//     (bit_depth_reduced).

// audioScanLimit bounds how many chunks or blocks the scan walks.
const audioScanLimit = 4096

// reportAudioLosses warns about what the input carries that the output does not keep. It
// reads a little of the file's structure and never fails the conversion.
func reportAudioLosses(in *io.SectionReader, src *audioCodec, to string, p convert.Params) {
	var tags []string
	switch src.id {
	case "wav":
		var float bool
		tags, float = wavExtras(in)
		if float {
			p.Warn(convert.WarnBitDepthReduced, "the WAV has floating-point samples; they were written as 24-bit integers, and values beyond full scale were clipped")
		}
	case "flac":
		tags = flacExtras(in)
	case "mp3":
		tags = mp3Extras(in)
	case "ogg":
		tags = oggExtras(in)
	}
	if len(tags) > 0 {
		p.Warn(convert.WarnMetadataDropped, fmt.Sprintf("the %s's %s were not written to the %s", src.name, joinAnd(tags), formatName(to)))
	}
}

func formatName(id string) string {
	if id == "flac" {
		return "FLAC"
	}
	return "WAV"
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	s := words[0]
	for _, w := range words[1 : len(words)-1] {
		s += ", " + w
	}
	return s + " and " + words[len(words)-1]
}

// wavExtras walks the RIFF chunks for tags and reports whether the samples are float.
func wavExtras(in *io.SectionReader) (tags []string, float bool) {
	le := binary.LittleEndian
	off := int64(12)
	var h [8]byte
	for range audioScanLimit {
		if _, err := in.ReadAt(h[:], off); err != nil {
			break
		}
		id, n := string(h[:4]), int64(le.Uint32(h[4:]))
		switch id {
		case "fmt ":
			var f [40]byte
			m, _ := in.ReadAt(f[:min(n, 40)], off+8)
			if m >= 2 {
				tag := le.Uint16(f[:])
				// WAVE_FORMAT_IEEE_FLOAT, or EXTENSIBLE whose subformat GUID starts with it.
				float = tag == 3 || tag == 0xFFFE && m >= 26 && le.Uint16(f[24:]) == 3
			}
		case "LIST":
			tags = appendOnce(tags, "tags (LIST INFO)")
		case "id3 ", "ID3 ":
			tags = appendOnce(tags, "ID3 tags")
		case "bext", "iXML":
			tags = appendOnce(tags, "broadcast metadata ("+id+")")
		}
		if id == "data" && (n == 0 || n == 0xFFFFFFFF) {
			break // a streamed file: its data runs to the end
		}
		off += 8 + n + n&1
	}
	return tags, float
}

// flacExtras walks the metadata blocks for comments, pictures and cue sheets.
func flacExtras(in *io.SectionReader) []string {
	var tags []string
	off := int64(4)
	var h [4]byte
	for range audioScanLimit {
		if _, err := in.ReadAt(h[:], off); err != nil {
			break
		}
		last, typ := h[0]&0x80 != 0, h[0]&0x7f
		n := int64(h[1])<<16 | int64(h[2])<<8 | int64(h[3])
		switch typ {
		case 4:
			if vorbisCommentCount(in, off+4, binary.LittleEndian) > 0 {
				tags = appendOnce(tags, "tags (Vorbis comments)")
			}
		case 5:
			tags = appendOnce(tags, "cue sheet")
		case 6:
			tags = appendOnce(tags, "pictures")
		}
		if last {
			break
		}
		off += 4 + n
	}
	return tags
}

// vorbisCommentCount reads the number of user comments of a Vorbis comment block at off: a
// vendor string, then the count.
func vorbisCommentCount(in *io.SectionReader, off int64, le binary.ByteOrder) uint32 {
	var b [4]byte
	if _, err := in.ReadAt(b[:], off); err != nil {
		return 0
	}
	vendor := int64(le.Uint32(b[:]))
	if _, err := in.ReadAt(b[:], off+4+vendor); err != nil {
		return 0
	}
	return le.Uint32(b[:])
}

// mp3Extras looks for an ID3v2 tag at the start and an ID3v1 tag at the end.
func mp3Extras(in *io.SectionReader) []string {
	var tags []string
	var h [3]byte
	if _, err := in.ReadAt(h[:], 0); err == nil && string(h[:]) == "ID3" {
		tags = append(tags, "ID3 tags")
	}
	if in.Size() >= 128 {
		if _, err := in.ReadAt(h[:], in.Size()-128); err == nil && string(h[:]) == "TAG" {
			tags = appendOnce(tags, "ID3 tags")
		}
	}
	return tags
}

// oggExtras looks in the first pages for the Vorbis comment header and its comment count.
func oggExtras(in *io.SectionReader) []string {
	head := make([]byte, min(in.Size(), 64<<10))
	n, _ := in.ReadAt(head, 0)
	head = head[:n]
	i := bytes.Index(head, []byte("\x03vorbis"))
	if i < 0 {
		return nil
	}
	if vorbisCommentCount(io.NewSectionReader(bytes.NewReader(head), 0, int64(len(head))), int64(i+7), binary.LittleEndian) > 0 {
		return []string{"tags (Vorbis comments)"}
	}
	return nil
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
