// Package cli holds convsvc's cobra commands, their flags with CONVSVC_* environment twins, and
// the wiring from flags to the service.
package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/client"
)

// Version is set at build time with -ldflags "-X github.com/convsvc/convsvc/cli.Version=...".
var Version = "dev"

// Execute runs the root command with os.Args and exits non-zero on error.
func Execute() {
	cmd := NewRootCommand()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "convsvc:", describe(err))
		os.Exit(1)
	}
}

// NewRootCommand builds the command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "convsvc",
		Short:         "A self-hosted file conversion service in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd)
		},
	}
	root.AddCommand(newServeCommand(), newConfigCommand(), newConvertCommand(), newFormatsCommand(), newAdminCommand(), newVersionCommand())
	return root
}

// envName is a flag's environment twin: --drain-timeout -> CONVSVC_DRAIN_TIMEOUT.
func envName(flag string) string {
	return "CONVSVC_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// secretFlags may also be read from the file named by their _FILE twin.
var secretFlags = map[string]bool{"admin-token": true, "key": true, "database": true}

// applyEnv sets every flag not given on the command line from its CONVSVC_* twin (or, for
// secrets, from the file named by CONVSVC_*_FILE).
func applyEnv(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
			return
		}
		if path, ok := os.LookupEnv(name + "_FILE"); ok && secretFlags[f.Name] {
			b, err := os.ReadFile(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s_FILE: %w", name, err))
				return
			}
			if err := f.Value.Set(strings.TrimSpace(string(b))); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// withEnvHelp appends each flag's environment twin (and a secret's _FILE twin) to its usage text.
func withEnvHelp(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if secretFlags[f.Name] {
			f.Usage += " [$" + envName(f.Name) + ", $" + envName(f.Name) + "_FILE]"
			return
		}
		f.Usage += " [$" + envName(f.Name) + "]"
	})
}

// describe prints API errors with their stable code first.
func describe(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("%s: %s", apiErr.Code, apiErr.Message)
	}
	return err.Error()
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "convsvc", Version)
			return nil
		},
	}
}
