package cli

import (
	"context"
	"errors"
	"slices"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
)

// forInputs rewrites err, a refusal by opts.Validate(target), when it refuses an option target
// does not take and every input has one format: its "accepted" list then names only the
// options that apply to that input (convert.ApplicableOptions), as create's refusal does.
// Any other error, or inputs of several formats, leave err as it is.
func (o *convertOptions) forInputs(ctx context.Context, c *client.Client, formats []client.Format, plans []*plan,
	opts convert.Options, target convert.Format, err error) error {
	var oe *convert.OptionError
	if !errors.As(err, &oe) || slices.Contains(target.Options, oe.Option) || len(plans) == 0 {
		return err
	}
	from := ""
	for _, p := range plans {
		f, ferr := o.inputFormat(formats, p)
		if ferr != nil || from != "" && f != from {
			return err
		}
		from = f
	}
	src, ferr := c.Format(ctx, from)
	if ferr != nil {
		return err
	}
	pages := remoteFormats{c}.pagesApply(src, client.Format{ID: target.ID, Category: target.Category})
	if rerr := opts.ValidateConversion(convert.Format{ID: src.ID, Category: src.Category}, target, pages); rerr != nil {
		return rerr
	}
	return err
}
