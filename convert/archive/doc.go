// Package archive is the archive family: zip, tar, tar.gz (tgz) and tar.zst (tzst), each
// repacked into every other entry by entry, plus rar and 7z recognised without a converter.
// Entry names are cleaned (no absolute paths, no ".."); links, devices and FIFOs fail the
// conversion naming the entry; nested archives are copied as files, not unpacked.
//
// Modules: archive/zip and archive/tar from the standard library, klauspost/compress (gzip,
// zstd, flate).
//
// Limits: ArchiveMaxEntries, ArchiveMaxEntryBytes and ArchiveMaxTotalBytes, and an expansion
// budget of ArchiveMaxRatio times the input (at least ArchiveMinBudget), counted as bytes are
// written rather than trusted from headers.
package archive
