package document

import (
	"fmt"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestSVGCSS_Cascade: <style> rules with type, class, id and comma-list selectors paint
// shapes and text by specificity then order, over presentation attributes and under style="",
// with !important over style="".
func TestSVGCSS_Cascade(t *testing.T) {
	useFontDir(t, "")
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40">
<style type="text/css"><![CDATA[
/* comment { rect { fill: #123456 } */
rect { fill: #00ff00 }
.a { fill: #ff0000 }
rect.a.late { fill: #00ffff }
#b { fill: #0000ff }
.c { fill: #ff0000 } .c { fill: #ffff00 }
.d, .e { fill: #ff00ff }
.imp { fill: #808080 !important }
@media print { rect { fill: #ffffff } }
g > rect, rect:hover, [x] { fill: #ffffff }
.t { fill: #0000ff; font-size: 30px }
]]></style>
<rect x="0" y="0" width="10" height="10"/>
<rect x="10" y="0" width="10" height="10" class="a"/>
<rect x="20" y="0" width="10" height="10" class="a" id="b"/>
<rect x="30" y="0" width="10" height="10" class="a" style="fill:#000000"/>
<rect x="40" y="0" width="10" height="10" class="a" fill="#ffffff"/>
<rect x="50" y="0" width="10" height="10" class="c"/>
<rect x="60" y="0" width="10" height="10" class="e"/>
<rect x="70" y="0" width="10" height="10" class="imp" style="fill:#000000"/>
<rect x="80" y="0" width="10" height="10" class="late a"/>
<g><rect x="90" y="0" width="10" height="10"/></g>
<text x="0" y="38" class="t">WWWWWW</text>
</svg>`
	png, err := docConvertData(t, docCatalog(), fmtSVG, "png", []byte(svg), convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	img := docDecodePNG(t, png)
	for i, want := range []string{"00ff00", "ff0000", "0000ff", "000000", "ff0000", "ffff00", "ff00ff", "808080", "00ffff", "00ff00"} {
		r, g, b, _ := img.At(i*10+5, 5).RGBA()
		if got := fmt.Sprintf("%02x%02x%02x", r>>8, g>>8, b>>8); got != want {
			t.Errorf("rect %d is #%s, want #%s", i, got, want)
		}
	}
	// The text is blue and 30 px: blue pixels above y=20 (a 16 px default would stay below).
	blue, high := 0, 0
	for y := 12; y < 40; y++ {
		for x := 0; x < 200; x++ {
			r, g, b, a := img.At(x, y).RGBA()
			if a>>8 > 0xc0 && r>>8 < 0x40 && g>>8 < 0x40 && b>>8 > 0xc0 {
				blue++
				if y < 20 {
					high++
				}
			}
		}
	}
	if blue < 100 || high == 0 {
		t.Errorf("%d blue text pixels, %d of them above y=20; want the .t rule's blue 30 px text", blue, high)
	}
}
