package convert

// registerDocumentFormats adds the documents, PDF and vector graphics formats and their converters.
func registerDocumentFormats(c *Catalog) {
	c.AddFormat(Format{ID: "pdf", Name: "PDF document", Category: CategoryDocument, Extensions: []string{"pdf"}, MIME: "application/pdf"})
	c.AddFormat(Format{ID: "markdown", Name: "Markdown document", Category: CategoryDocument, Extensions: []string{"md", "markdown"}, MIME: "text/markdown"})
	c.AddFormat(Format{ID: "html", Name: "HTML document", Category: CategoryDocument, Extensions: []string{"html", "htm"}, MIME: "text/html"})
	c.AddFormat(Format{ID: "txt", Name: "Plain text", Category: CategoryDocument, Extensions: []string{"txt"}, MIME: "text/plain"})
}
