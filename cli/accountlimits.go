package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
)

// limitFlags are admin accounts update's --max-running and --max-queued.
type limitFlags struct {
	maxRunning, maxQueued string
}

func (f *limitFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.maxRunning, "max-running", "", "the most jobs of the account running at once (N of at least 1, or unlimited)")
	cmd.Flags().StringVar(&f.maxQueued, "max-queued", "", "the most jobs of the account queued at once; a start past it is refused with 429 queue_full (N of at least 1, or unlimited)")
}

// parseLimitFlag reads a limit flag's value: a whole number of at least 1, or "unlimited".
func parseLimitFlag(name, v string) (*client.Limit, error) {
	if v == "unlimited" {
		return &client.Limit{Unlimited: true}, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("--%s %q: give a whole number of at least 1, or unlimited", name, v)
	}
	return &client.Limit{Value: n}, nil
}

// limits reads the flags that were given; ok is false when none was.
func (f *limitFlags) limits(cmd *cobra.Command) (l client.AccountLimits, ok bool, err error) {
	if cmd.Flags().Changed("max-running") {
		if l.MaxRunning, err = parseLimitFlag("max-running", f.maxRunning); err != nil {
			return l, false, err
		}
	}
	if cmd.Flags().Changed("max-queued") {
		if l.MaxQueued, err = parseLimitFlag("max-queued", f.maxQueued); err != nil {
			return l, false, err
		}
	}
	return l, l.MaxRunning != nil || l.MaxQueued != nil, nil
}
