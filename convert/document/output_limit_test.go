package document

import (
	"errors"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestDocument_ReferenceReuseRefused holds issue 18 item 4 for documents: a Markdown link
// reference definition is named once and used many times, each use a few bytes and its
// output the whole target; a 66 KB file that would write about 300 MB of HTML is refused at
// the output limit, naming it.
func TestDocument_ReferenceReuseRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	src := "[r]: https://example.com/" + strings.Repeat("a", 30_000) + "\n\n" + strings.Repeat(strings.Repeat("[r] ", 200)+"\n\n", 50)
	out, err := docConvertData(t, docCatalog(), fmtMarkdown, fmtHTML, []byte(src), convert.Options{})
	var ce *convert.Error
	if !errors.Is(err, convert.ErrOutputTooLarge) || !errors.As(err, &ce) || !strings.Contains(ce.Message, "the output ratio limit") {
		t.Fatalf("%d-byte Markdown: err = %v, want ErrOutputTooLarge naming the ratio limit", len(src), err)
	}
	if len(out) > convert.OutputRatioFloor {
		t.Errorf("wrote %d bytes, over the %d floor", len(out), convert.OutputRatioFloor)
	}
}
