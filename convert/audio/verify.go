package audio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/flacdec"
)

// frameSlack is how far, in samples per channel, an output may differ from the input's
// duration: one codec frame of the input (an MP3 frame is 1152 samples, a Vorbis block at most
// 8192); lossless inputs keep every sample.
var frameSlack = map[string]int64{"wav": 0, "flac": 0, "mp3": 1152, "ogg": 8192}

// registerVerifiers adds the output checks of the formats the family writes: the output
// is read to its end by a reader that is not the encoder (FLAC by flacdec's frame walk, which
// checks every frame's CRCs and numbers, where flacenc writes it; WAV by walking its RIFF
// chunks) and lasts as long as the input within one of the input's frames.
func registerVerifiers(c *convert.Catalog) {
	c.AddVerifier("wav", verifyAudio(wavFrames))
	c.AddVerifier("flac", verifyAudio(flacFrames))
}

// verifyAudio checks an output whose samples per channel frames counts.
func verifyAudio(frames func(ctx context.Context, out *io.SectionReader) (int64, error)) convert.Verifier {
	return func(ctx context.Context, out *io.SectionReader, chk convert.Check) error {
		got, err := frames(ctx, out)
		if err != nil {
			return err
		}
		if got <= 0 {
			return errors.New("the audio has no samples")
		}
		want := inputFrames(ctx, chk)
		if want < 0 {
			return nil // the input's header does not state its length; decoding it twice is too dear
		}
		if d := got - want; d > frameSlack[chk.InputFormat] || -d > frameSlack[chk.InputFormat] {
			return fmt.Errorf("the audio holds %d samples per channel where the input holds %d", got, want)
		}
		return nil
	}
}

// inputFrames is the input's length in samples per channel as its header (or, for MP3, its
// frame headers) states it; -1 when unknown.
func inputFrames(ctx context.Context, chk convert.Check) int64 {
	for i := range audioDecoders {
		if codec := &audioDecoders[i]; codec.id == chk.InputFormat && chk.Input != nil {
			s, err := openAudio(ctx, codec, chk.Input)
			if err != nil {
				return -1
			}
			return s.info().frames
		}
	}
	return -1
}

// flacFrames walks a FLAC stream's frames to its end and returns its samples per channel,
// which must match STREAMINFO's count. flacdec's Walk reads each frame's header (its CRC-8,
// its number) and checks the CRC-16 over each frame's bytes without decoding the subframes:
// decoding them cost 44% of a WAV -> FLAC conversion, the walk 4% (docs/benchmarks.md). It
// shares only the CRC tables with flacenc, which writes the stream.
func flacFrames(ctx context.Context, out *io.SectionReader) (int64, error) {
	dec, err := flacdec.NewDecoder(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(out, 0, out.Size())})
	if err != nil && !errors.Is(err, flacdec.ErrUnsupported) {
		return 0, fmt.Errorf("the FLAC stream does not open: %w", err)
	}
	n, err := dec.Walk()
	if err != nil {
		return 0, fmt.Errorf("the FLAC frame after %d samples is not whole: %w", n, err)
	}
	if want := dec.Info().Samples; want != 0 && want != n {
		return 0, fmt.Errorf("the FLAC header says %d samples and the frames hold %d", want, n)
	}
	return n, nil
}

// wavFrames walks a WAV file's RIFF chunks: the RIFF size and every chunk must fit the file,
// and the data chunk's length over the format's block size is the samples per channel.
func wavFrames(_ context.Context, out *io.SectionReader) (int64, error) {
	head := make([]byte, 12)
	if _, err := out.ReadAt(head, 0); err != nil || string(head[:4]) != "RIFF" || string(head[8:12]) != "WAVE" {
		return 0, errors.New("the WAV header is missing")
	}
	end := int64(binary.LittleEndian.Uint32(head[4:8])) + 8
	if end > out.Size() {
		return 0, fmt.Errorf("the RIFF header says %d bytes and the file has %d", end, out.Size())
	}
	blockAlign, data := int64(0), int64(-1)
	for off := int64(12); off+8 <= end; {
		ch := make([]byte, 8)
		if _, err := out.ReadAt(ch, off); err != nil {
			return 0, fmt.Errorf("the chunk at byte %d is incomplete", off)
		}
		n := int64(binary.LittleEndian.Uint32(ch[4:8]))
		if off+8+n > end {
			return 0, fmt.Errorf("the %q chunk reaches past the end of the file", ch[:4])
		}
		switch string(ch[:4]) {
		case "fmt ":
			f := make([]byte, 16)
			if n < 16 {
				return 0, errors.New("the fmt chunk is too short")
			}
			if _, err := out.ReadAt(f, off+8); err != nil {
				return 0, errors.New("the fmt chunk is incomplete")
			}
			blockAlign = int64(binary.LittleEndian.Uint16(f[12:14]))
		case "data":
			data = n
		}
		off += 8 + n + n&1
	}
	if blockAlign <= 0 || data < 0 {
		return 0, errors.New("the WAV file lacks its fmt or data chunk")
	}
	if data%blockAlign != 0 {
		return 0, fmt.Errorf("the data chunk's %d bytes are not whole %d-byte sample frames", data, blockAlign)
	}
	return data / blockAlign, nil
}
