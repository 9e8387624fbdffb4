package convert

// registerDataFormats adds the tabular and tree data formats and their converters.
func registerDataFormats(c *Catalog) {
	c.AddFormat(Format{ID: "json", Name: "JSON data", Category: CategoryData, Extensions: []string{"json"}, MIME: "application/json"})
	c.AddFormat(Format{ID: "csv", Name: "CSV data", Category: CategoryData, Extensions: []string{"csv"}, MIME: "text/csv"})
	c.AddFormat(Format{ID: "yaml", Name: "YAML data", Category: CategoryData, Extensions: []string{"yaml", "yml"}, MIME: "application/yaml"})
}
