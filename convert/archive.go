package convert

// registerArchiveFormats adds the archives formats and their converters.
func registerArchiveFormats(c *Catalog) {
	c.AddFormat(Format{ID: "zip", Name: "ZIP archive", Category: CategoryArchive, Extensions: []string{"zip"}, MIME: "application/zip"})
}
