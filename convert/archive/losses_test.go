package archive

import (
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// TestArchive_Warnings: owners, setuid bits and zip comments a repack cannot keep are reported,
// exactly. The samples are made by GNU tar and Info-ZIP zip
// (testdata/archives/make-owner-samples.sh).
func TestArchive_Warnings(t *testing.T) {
	c := convert.NewEmptyCatalog(convert.Limits{})
	Register(c)
	w := convtest.Warning
	cases := []convtest.WarningCase{
		{Sample: "sample-owners.tar", From: "tar", To: "zip", Want: []convert.Warning{w(convert.WarnPermissionsDropped,
			`the setuid, setgid or sticky bits of 1 entry ("bin/tool"...) and the owners (user and group) of 3 entries ("bin/"...) were not kept; read, write and execute bits were`)}},
		{Sample: "sample-owners.tar", From: "tar", To: "tgz", Want: []convert.Warning{w(convert.WarnPermissionsDropped,
			`the setuid, setgid or sticky bits of 1 entry ("bin/tool"...) and the owners (user and group) of 3 entries ("bin/"...) were not kept; read, write and execute bits were`)}},
		{Sample: "sample-comment.zip", From: "zip", To: "tar", Want: []convert.Warning{w(convert.WarnMetadataDropped, "1 zip comment(s) were not kept")}},
		{Sample: "sample.zip", From: "zip", To: "tar"},
	}
	convtest.CheckWarnings(t, c, filepath.Join(convtest.Testdata, "archives"), cases)
}
