package data

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/pelletier/go-toml/v2/unstable"
	"go.yaml.in/yaml/v3"

	"github.com/convsvc/convsvc/convert"
)

// What a data conversion cannot keep is reported as a warning on the job (issue 23). Values,
// types (where the target has them) and order are kept, or the conversion fails saying where
// (nesting in a CSV cell, null in TOML, ...). Lost, and so reported:
//
//   - comments of YAML, TOML and XML inputs: the tree model holds values only (metadata_dropped);
//   - of a workbook: the other sheets (sheets_dropped), formulas (formatting_dropped), charts
//     and pictures (images_dropped) and hyperlinks (links_dropped), in data_xlsx.go.

// reportTreeLosses warns about the comments of a YAML, TOML or XML input. It reads the input
// again (within the tree limits readTree already checked) and never fails the conversion.
func reportTreeLosses(ctx context.Context, from string, in *io.SectionReader, p convert.Params) {
	if from != "yaml" && from != "toml" && from != "xml" {
		return
	}
	data, err := readTreeInput(ctx, in, formatTitle(from))
	if err != nil {
		return
	}
	if hasComments(from, data) {
		p.Warn(convert.WarnMetadataDropped, fmt.Sprintf("the %s's comments were not kept; only its values were converted", formatTitle(from)))
	}
}

// hasComments reports whether a YAML, TOML or XML document holds a comment.
func hasComments(format string, data []byte) bool {
	switch format {
	case "xml":
		return bytes.Contains(data, []byte("<!--"))
	case "toml":
		if !bytes.Contains(data, []byte("#")) {
			return false
		}
		p := unstable.Parser{KeepComments: true}
		p.Reset(data)
		for p.NextExpression() {
			if p.Expression().Kind == unstable.Comment {
				return true
			}
		}
		return false
	case "yaml":
		if !bytes.Contains(data, []byte("#")) {
			return false
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				return false
			}
			if yamlHasComment(&n) {
				return true
			}
		}
	}
	return false
}

func yamlHasComment(n *yaml.Node) bool {
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
		return true
	}
	for _, c := range n.Content {
		if yamlHasComment(c) {
			return true
		}
	}
	return false
}
