// Package data is the data family: JSON, NDJSON, YAML, TOML, XML, CSV, TSV and XLSX, each
// converted directly to every other, and tables to Markdown and HTML when the document family
// registered those formats first.
//
// Tables (csv, tsv, xlsx, ndjson, and json as an array of flat objects) stream row by row where
// the format allows; trees (json, yaml, toml, xml) are held in memory whole. Several top-level
// members go to XML inside one <root convsvc="members"> element, which reading XML unwraps;
// objects and arrays in Markdown, HTML and NDJSON cells are written as compact JSON, and a
// tree that is not a table is laid out in Markdown and HTML as headings and key | value
// tables. What a target cannot hold fails with a message naming where, instead of being
// dropped.
//
// Modules: the standard library (encoding/json, encoding/csv, encoding/xml), go.yaml.in/yaml/v3,
// pelletier/go-toml/v2, xuri/excelize/v2 (XLSX) and golang.org/x/net/html/charset.
//
// Limits: DataMaxTreeBytes, DataMaxYAMLBytes, DataMaxNodes and DataMaxDepth bound trees,
// DataMaxColumns and DataMaxRecordBytes tables, and the XLSXMax* constants workbooks (input,
// unzipped size, shared strings, parts, rows). XML never resolves external entities.
package data
