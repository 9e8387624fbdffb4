package archive

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestArchive_Warnings: owners, setuid bits and zip comments a repack cannot keep are reported,
// exactly. The samples are made by GNU tar and Info-ZIP zip
// (testdata/archives/make-owner-samples.sh).
func TestArchive_Warnings(t *testing.T) {
	c := convert.NewEmptyCatalog(convert.Limits{})
	Register(c)
	w := func(code, message string) convert.Warning { return convert.Warning{Code: code, Message: message} }
	tests := []struct {
		sample, from, to string
		want             []convert.Warning
	}{
		{"sample-owners.tar", "tar", "zip", []convert.Warning{w(convert.WarnPermissionsDropped,
			`the setuid, setgid or sticky bits of 1 entry ("bin/tool"...) and the owners (user and group) of 3 entries ("bin/"...) were not kept; read, write and execute bits were`)}},
		{"sample-owners.tar", "tar", "tgz", []convert.Warning{w(convert.WarnPermissionsDropped,
			`the setuid, setgid or sticky bits of 1 entry ("bin/tool"...) and the owners (user and group) of 3 entries ("bin/"...) were not kept; read, write and execute bits were`)}},
		{"sample-comment.zip", "zip", "tar", []convert.Warning{w(convert.WarnMetadataDropped, "1 zip comment(s) were not kept")}},
		{"sample.zip", "zip", "tar", nil},
	}
	for _, tt := range tests {
		f, err := os.Open(filepath.Join("..", "..", "testdata", "archives", tt.sample))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := c.Convert(context.Background(), tt.from, tt.to, convert.Options{}, f, io.Discard, t.TempDir())
		f.Close()
		if err != nil {
			t.Fatalf("%s -> %s: %v", tt.sample, tt.to, err)
		}
		if !reflect.DeepEqual(ws, tt.want) {
			t.Errorf("%s -> %s: warnings\n%+v\nwant\n%+v", tt.sample, tt.to, ws, tt.want)
		}
	}
}
