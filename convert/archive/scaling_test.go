package archive

import (
	"archive/tar"
	"fmt"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// TestArchive_Scaling holds issue 18 item 2 for archives: repacking takes about 4x the CPU
// time for 4x the entries, for flat and deep trees of files and directories (name checks,
// duplicate detection and directory creation must not compare each entry with every
// earlier one).
func TestArchive_Scaling(t *testing.T) {
	zipFlat := func(n int) []byte {
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf("dir%d/sub/file%d.txt", i%50, i), "x")
		}
		return zipOf(t, kv...)
	}
	tarFlat := func(n int) []byte {
		var hs []*tar.Header
		for i := range n {
			hs = append(hs, &tar.Header{Name: fmt.Sprintf("d%d/f%d.txt", i%50, i), Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
		}
		return tarOf(t, hs...)
	}
	tarDirs := func(n int) []byte {
		var hs []*tar.Header
		for i := range n {
			hs = append(hs, &tar.Header{Name: fmt.Sprintf("d%d/", i), Typeflag: tar.TypeDir, Mode: 0o755},
				&tar.Header{Name: fmt.Sprintf("d%d/f", i), Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
		}
		return tarOf(t, hs...)
	}
	cases := []struct {
		name, from, to string
		n              int
		gen            func(n int) []byte
	}{
		{"zip to tar", "zip", "tar", 2_000, zipFlat},
		{"tar to zip", "tar", "zip", 2_000, tarFlat},
		{"tar directories to tgz", "tar", "tgz", 2_000, tarDirs},
		{"zip to tzst", "zip", "tzst", 2_000, zipFlat},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			convtest.Scaling(t, cputime.Self, tc.n, tc.gen, func(t *testing.T, in []byte) error {
				_, err := archiveConvert(t, tc.from, tc.to, in)
				return err
			})
		})
	}
}
