package document

import "github.com/convsvc/convsvc/convert/internal/fonts"

// Text is drawn with the faces of convert/internal/fonts: the embedded Go fonts, the embedded
// CJK and Hangul subsets, then the fonts of the font directory.

// DefaultFontDir is where fonts are looked for when SetFontDir is not called: the usual
// system font directory of Linux distributions.
const DefaultFontDir = fonts.DefaultDir

// SetFontDir sets the directory searched (recursively) for fonts that draw characters the
// embedded fonts lack, and for the font families SVG text names; "" searches none. It is read
// once, the first time a font is needed after the call.
func SetFontDir(dir string) { fonts.SetDir(dir) }

// FontDir returns the font directory in effect.
func FontDir() string { return fonts.Dir() }
