package archive

import (
	"archive/tar"
	"fmt"
	"strings"

	"github.com/convsvc/convsvc/convert"
)

// What a repack cannot keep is reported as a warning on the job (issue 23). Names, contents,
// directories, permission bits (rwx) and modification times (to the second) are kept; links,
// devices and FIFOs are refused naming the entry. Lost, and so reported:
//
//   - setuid, setgid and sticky bits, and tar's owners (uid, gid, user and group names): the
//     writers set neither (permissions_dropped);
//   - tar's extended attributes and ACLs (PAX SCHILY.xattr and LIBARCHIVE.xattr records) and
//     zip comments (metadata_dropped).

// archiveLosses counts what the reader saw that the writer does not keep.
type archiveLosses struct {
	specialBits, owners, xattrs, comments int
	firstSpecial, firstOwner, firstXattr  string // an example entry of each
}

// noteTar records what a tar header carries beyond name, type, size, rwx bits and time.
func (l *archiveLosses) noteTar(name string, h *tar.Header) {
	if h.Mode&0o7000 != 0 {
		if l.specialBits == 0 {
			l.firstSpecial = name
		}
		l.specialBits++
	}
	if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
		if l.owners == 0 {
			l.firstOwner = name
		}
		l.owners++
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "SCHILY.xattr.") || strings.HasPrefix(k, "LIBARCHIVE.xattr.") || strings.HasPrefix(k, "SCHILY.acl.") {
			if l.xattrs == 0 {
				l.firstXattr = name
			}
			l.xattrs++
			break
		}
	}
}

// report turns the counts into warnings.
func (l *archiveLosses) report(p convert.Params) {
	var perms []string
	if l.specialBits > 0 {
		perms = append(perms, fmt.Sprintf("the setuid, setgid or sticky bits of %s (%q...)", entries(l.specialBits), l.firstSpecial))
	}
	if l.owners > 0 {
		perms = append(perms, fmt.Sprintf("the owners (user and group) of %s (%q...)", entries(l.owners), l.firstOwner))
	}
	if len(perms) > 0 {
		p.Warn(convert.WarnPermissionsDropped, strings.Join(perms, " and ")+" were not kept; read, write and execute bits were")
	}
	var meta []string
	if l.xattrs > 0 {
		meta = append(meta, fmt.Sprintf("the extended attributes or ACLs of %s (%q...)", entries(l.xattrs), l.firstXattr))
	}
	if l.comments > 0 {
		meta = append(meta, fmt.Sprintf("%d zip comment(s)", l.comments))
	}
	if len(meta) > 0 {
		p.Warn(convert.WarnMetadataDropped, strings.Join(meta, " and ")+" were not kept")
	}
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
