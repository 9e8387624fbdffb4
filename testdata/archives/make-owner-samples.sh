#!/bin/sh
# Writes the archive samples whose owners, special mode bits and comments a repack cannot keep
# (issue 23), with GNU tar and Info-ZIP zip (no Go code). Run from the module root:
#   sh testdata/archives/make-owner-samples.sh
set -eu
out="$PWD/testdata/archives"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir bin
printf '#!/bin/sh\necho hello\n' > bin/tool
printf 'plain notes\n' > notes.txt
chmod 4755 bin/tool
chmod 0644 notes.txt
touch -d 2026-01-02T03:04:05Z bin/tool notes.txt bin
tar --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	--owner=alice:1000 --group=staff:50 --sort=name --mtime=2026-01-02T03:04:05Z \
	-cf "$out/sample-owners.tar" bin notes.txt
printf 'archive comment\n' | TZ=UTC zip -q -X -z "$out/sample-comment.zip" notes.txt
