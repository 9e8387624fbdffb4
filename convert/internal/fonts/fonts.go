// Package fonts holds the faces text is drawn with: the embedded Go fonts, the embedded CJK
// and Hangul subsets (ttf/, with their licences and the script that makes them), and the
// TrueType/OpenType fonts of a font directory, chosen per character (Pick, ForRune). PDF
// output (convert/document's layout and its SVG pages) embeds them; the helpers for that
// (SafeText, FaceMemory, RunWith and its bounds) are in pdf.go.
package fonts

import (
	_ "embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
)

// Text is drawn with the embedded Go fonts (Latin, Greek, Cyrillic) and an embedded subset
// of Droid Sans Fallback (CJK: kana, Hangul, the CJK Unified Ideographs block; made by
// ttf/make-cjk-subset.sh, Apache License 2.0, 2.8 MB) and Nanum Gothic subset to Hangul, chosen per character: a character the
// named or default face lacks is drawn with the first face that has it, the embedded ones
// first, then TrueType/OpenType fonts found under the font directory (SetDir).

//go:embed ttf/cjk.ttf
var cjkTTF []byte

// hangulTTF is Nanum Gothic (SIL Open Font License 1.1) subset to Hangul, 1.3 MB: Droid Sans
// Fallback has no Hangul syllables.
//
//go:embed ttf/hangul.ttf
var hangulTTF []byte

// DefaultDir is where fonts are looked for when SetDir is not called: the usual
// system font directory of Linux distributions.
const DefaultDir = "/usr/share/fonts"

// Bounds on what the font directory may cost.
const (
	fontDirMaxFiles    = 400
	fontDirMaxFileSize = 32 << 20
)

var fontDir = struct {
	sync.Mutex
	dir    string
	set    bool
	once   *sync.Once
	loaded []*Face
}{dir: DefaultDir, once: new(sync.Once)}

// SetDir sets the directory searched (recursively) for fonts that draw characters the
// embedded fonts lack, and for the font families SVG text names; "" searches none. It is read
// once, the first time a font is needed after the call.
func SetDir(dir string) {
	fontDir.Lock()
	defer fontDir.Unlock()
	fontDir.dir, fontDir.set, fontDir.once, fontDir.loaded = dir, true, new(sync.Once), nil
}

// Dir returns the font directory in effect.
func Dir() string {
	fontDir.Lock()
	defer fontDir.Unlock()
	return fontDir.dir
}

// Face is one font face that text may be drawn with.
type Face struct {
	family       string // lower case
	bold, italic bool
	ttf          []byte
	font         *sfnt.Font
	once         sync.Once
	err          error
	pdfOnce      sync.Once // pdfOK's trial
	pdfGood      bool
}

// Parse returns the face's parsed font, parsing it the first time.
func (f *Face) Parse() (*sfnt.Font, error) {
	f.once.Do(func() {
		if f.font == nil {
			f.font, f.err = sfnt.Parse(f.ttf)
		}
	})
	return f.font, f.err
}

// Has reports whether the face has a glyph for r.
func (f *Face) Has(buf *sfnt.Buffer, r rune) bool {
	fnt, err := f.Parse()
	if err != nil {
		return false
	}
	g, err := fnt.GlyphIndex(buf, r)
	return err == nil && g != 0
}

// The embedded faces: Sans and Mono by style (regular, bold, italic, bold italic), CJK for kana
// and ideographs, Hangul for Korean.
var (
	Sans = [4]*Face{
		{family: "go", ttf: goregular.TTF}, {family: "go", bold: true, ttf: gobold.TTF},
		{family: "go", italic: true, ttf: goitalic.TTF}, {family: "go", bold: true, italic: true, ttf: gobolditalic.TTF},
	}
	Mono = [4]*Face{
		{family: "go mono", ttf: gomono.TTF}, {family: "go mono", bold: true, ttf: gomonobold.TTF},
		{family: "go mono", italic: true, ttf: gomonoitalic.TTF}, {family: "go mono", bold: true, italic: true, ttf: gomonobolditalic.TTF},
	}
	CJK    = &Face{family: "droid sans fallback", ttf: cjkTTF}
	Hangul = &Face{family: "nanumgothic", ttf: hangulTTF}
)

// TTF returns the face's font file.
func (f *Face) TTF() []byte { return f.ttf }

// Family returns the face's family name, in lower case.
func (f *Face) Family() string { return f.family }

// dirFaces returns the faces of the font directory, reading it the first time.
func dirFaces() []*Face {
	fontDir.Lock()
	once, dir := fontDir.once, fontDir.dir
	fontDir.Unlock()
	once.Do(func() {
		faces := loadFontDir(dir)
		fontDir.Lock()
		fontDir.loaded = faces
		fontDir.Unlock()
	})
	fontDir.Lock()
	defer fontDir.Unlock()
	return fontDir.loaded
}

// loadFontDir reads every .ttf and .otf file under dir (up to fontDirMaxFiles files of at most
// fontDirMaxFileSize bytes each); files that do not parse are skipped.
func loadFontDir(dir string) []*Face {
	if dir == "" {
		return nil
	}
	var faces []*Face
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(faces) >= fontDirMaxFiles {
			return nil
		}
		ext := strings.ToLower(filepath.Ext(path))
		if ext != ".ttf" && ext != ".otf" {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > fontDirMaxFileSize {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		fnt, err := sfnt.Parse(data)
		if err != nil {
			return nil
		}
		var buf sfnt.Buffer
		fam, _ := fnt.Name(&buf, sfnt.NameIDFamily)
		sub, _ := fnt.Name(&buf, sfnt.NameIDSubfamily)
		sub = strings.ToLower(sub)
		f := &Face{family: strings.ToLower(fam), ttf: data, font: fnt,
			bold: strings.Contains(sub, "bold"), italic: strings.Contains(sub, "italic") || strings.Contains(sub, "oblique")}
		faces = append(faces, f)
		return nil
	})
	return faces
}

// svgGenericFamilies are the families tried, in order, for CSS generic names before the
// embedded fonts, as fontconfig's defaults do on Linux.
var svgGenericFamilies = map[string][]string{
	"sans-serif": {"dejavu sans", "liberation sans", "noto sans", "freesans"},
	"serif":      {"dejavu serif", "liberation serif", "noto serif", "freeserif"},
	"monospace":  {"dejavu sans mono", "liberation mono", "noto sans mono", "freemono"},
}

// Pick chooses the face for the families a text names (CSS font-family, in order), its
// weight and style: a font-directory face of a named family (generic families map to common
// system fonts), else the embedded Go fonts (monospace for monospace families, sans otherwise).
func Pick(families []string, bold, italic bool) *Face {
	idx := 0
	if bold {
		idx++
	}
	if italic {
		idx += 2
	}
	mono := false
	var names []string
	for _, fam := range families {
		fam = strings.ToLower(strings.Trim(strings.TrimSpace(fam), `"'`))
		switch fam {
		case "monospace", "courier", "courier new", "go mono", "consolas", "menlo":
			mono = true
		}
		if g, ok := svgGenericFamilies[fam]; ok {
			names = append(names, g...)
		} else if fam != "" {
			names = append(names, fam)
		}
		if mono {
			break
		}
	}
	if len(families) == 0 {
		names = svgGenericFamilies["sans-serif"]
	}
	for _, fam := range names {
		var best *Face
		for _, f := range dirFaces() {
			if f.family != fam {
				continue
			}
			if f.bold == bold && f.italic == italic {
				return f
			}
			if best == nil || f.bold == bold && best.bold != bold {
				best = f
			}
		}
		if best != nil {
			return best
		}
	}
	if mono {
		return Mono[idx]
	}
	return Sans[idx]
}

// ForRune returns the face that draws r: first, when it has r, else the embedded faces,
// then the font directory's; nil when none has it.
func ForRune(buf *sfnt.Buffer, first *Face, r rune) *Face {
	if first.Has(buf, r) {
		return first
	}
	if Sans[0].Has(buf, r) {
		return Sans[0]
	}
	if CJK.Has(buf, r) {
		return CJK
	}
	if Hangul.Has(buf, r) {
		return Hangul
	}
	for _, f := range dirFaces() {
		if f.Has(buf, r) {
			return f
		}
	}
	return nil
}
