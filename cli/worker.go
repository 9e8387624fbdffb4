package cli

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/worker"
)

// newWorkerCommand is `convsvc worker`, a conversion worker process that serve starts
// (--isolation process); not shown in help.
func newWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run one conversion worker process (started by serve)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !worker.IsChild() {
				return errors.New("convsvc worker runs only as a worker process of convsvc serve (--isolation process)")
			}
			os.Exit(worker.ChildMain())
			return nil
		},
	}
}

// defaultIsolation is --isolation's default: worker processes where they run (Linux).
func defaultIsolation() string {
	if worker.Supported() {
		return "process"
	}
	return "none"
}
