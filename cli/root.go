// Package cli holds convsvc's cobra commands, their flags with CONVSVC_* environment twins, and
// the wiring from flags to the service.
package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/client"
)

// Version, when set at build time with -ldflags "-X github.com/convsvc/convsvc/cli.Version=...",
// overrides the module version from the build info in `convsvc version`.
var Version = ""

// errInterrupted ends a command stopped by SIGINT or SIGTERM after it cleaned up; the process
// exits 130, as a shell reports a program ended by Ctrl-C.
var errInterrupted = errors.New("interrupted")

// reportedError is an error the command already wrote (as a JSON log line, say): Execute exits
// non-zero without printing it again.
type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() error { return e.err }

// ExitCode is the process exit status for err: 0 for nil, 130 when interrupted, else 1.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errInterrupted):
		return 130
	default:
		return 1
	}
}

// Execute runs the root command with os.Args and exits non-zero on error.
func Execute() {
	standalone = true
	cmd := NewRootCommand()
	err := cmd.Execute()
	if err != nil && !errors.As(err, new(reportedError)) {
		fmt.Fprintln(cmd.ErrOrStderr(), "convsvc:", describe(err))
	}
	os.Exit(ExitCode(err))
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
	root.AddCommand(newServeCommand(), newConfigCommand(), newConvertCommand(), newFormatsCommand(), newWebhooksCommand(), newAdminCommand(), newVersionCommand(), newPrecompileCommand(), newWorkerCommand())
	root.SetFlagErrorFunc(flagError)
	refuseUnknownSubcommands(root)
	return root
}

// envName is a flag's environment twin: --drain-timeout -> CONVSVC_DRAIN_TIMEOUT. The server's
// URL is CONVSVC_URL for every command (--server).
func envName(flag string) string {
	if flag == "server" {
		return "CONVSVC_URL"
	}
	return "CONVSVC_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envAliases are older names still read when the main one is unset: CONVSVC_SERVER for
// CONVSVC_URL, CONVSVC_API_KEY for CONVSVC_KEY.
var envAliases = map[string]string{"CONVSVC_URL": "CONVSVC_SERVER", "CONVSVC_KEY": "CONVSVC_API_KEY"}

// secretFlags may also be read from the file named by their _FILE twin.
var secretFlags = map[string]bool{"admin-token": true, "key": true, "database": true}

// applyEnv sets every flag not given on the command line from its CONVSVC_* twin, else (for
// secrets) from the file named by CONVSVC_*_FILE, else from the twin's older alias.
func applyEnv(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := envName(f.Name)
		set := func(from, v string) {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, badValue(f, v, err))
			}
		}
		if v, ok := os.LookupEnv(name); ok {
			set(name, v)
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
			return
		}
		if alias, ok := envAliases[name]; ok {
			if v, ok := os.LookupEnv(alias); ok {
				set(alias, v)
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

// describe prints API errors with their stable code first and their request id last, and says
// what to do when nothing answers at the server's address.
func describe(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		if apiErr.RequestID != "" { // the id that finds the request in the server's log
			return fmt.Sprintf("%s: %s (request id %s)", apiErr.Code, apiErr.Message, apiErr.RequestID)
		}
		return fmt.Sprintf("%s: %s", apiErr.Code, apiErr.Message)
	}
	return err.Error()
}

// noServerError is a connection refused (or an unknown host) at the server's URL.
type noServerError struct {
	url string
	err error
}

func (e *noServerError) Error() string {
	return fmt.Sprintf("no convsvc is answering at %s (%v); start one with `convsvc serve`, "+
		"or point --server (CONVSVC_URL) at a running one", e.url, e.err)
}
func (e *noServerError) Unwrap() error { return e.err }

// reachable turns a refused connection or an unknown host at url into a noServerError.
func reachable(err error, url string) error {
	if err == nil {
		return nil
	}
	var dnsErr *net.DNSError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr) {
		cause := "connection refused"
		if dnsErr != nil {
			cause = "no such host"
		}
		return &noServerError{url: url, err: errors.New(cause)}
	}
	return err
}

// flagError names the nearest flags of the command to an unknown one.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) && invalid.GetFlag() != nil {
		return badValue(invalid.GetFlag(), invalid.GetValue(), errors.Unwrap(invalid))
	}
	var name string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		return fmt.Errorf("%w; run `%s --help` for the flags", err, cmd.CommandPath())
	default:
		return err
	}
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := levenshtein(name, f.Name); d <= 2 || strings.HasPrefix(f.Name, name) || (len(name) > 3 && strings.Contains(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return fmt.Errorf("%w; run `%s --help` for the flags", err, cmd.CommandPath())
	}
	return fmt.Errorf("%w; did you mean %s?", err, strings.Join(near, " or "))
}

// refuseUnknownSubcommands makes every command that only groups others (admin, admin accounts,
// ...) refuse an argument that is not one of its subcommands, suggesting the nearest, instead
// of printing help and exiting 0. Without arguments it still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			return fmt.Errorf("%w; did you mean %q?", err, strings.Join(near, `" or "`))
		}
		var subs []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				subs = append(subs, c.Name())
			}
		}
		return fmt.Errorf("%w; its commands are %s", err, strings.Join(subs, ", "))
	}
}

// levenshtein is the edit distance between a and b.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// versionInfo is what `convsvc version` reports, from the build info Go stamps into binaries.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	BuildTime string `json:"build_time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Go        string `json:"go"`
}

// buildVersion reads the module version, vcs.revision, vcs.time and vcs.modified.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		v.Go = bi.GoVersion
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.BuildTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		v.Version = Version
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and commit time of this binary",
		Long: "Print the module version, the commit (vcs.revision, with +dirty when the tree had\n" +
			"changes) and its time (vcs.time), as Go stamped them into the binary at build.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(v)
			}
			commit := v.Commit
			if commit == "" {
				commit = "unknown (built without VCS information)"
			} else if v.Modified {
				commit += "+dirty"
			}
			when := v.BuildTime
			if when == "" {
				when = "unknown"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "convsvc %s\ncommit %s\ncommit time %s\n%s\n", v.Version, commit, when, v.Go)
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}
