package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/bytesize"
	"github.com/convsvc/convsvc/internal/gcfloor"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/worker"
)

// configEntry is one serve setting as convsvc config shows it.
type configEntry struct {
	Flag   string `json:"flag"`
	Env    string `json:"env"`
	Value  string `json:"value"`
	Source string `json:"source"` // flag, env, env_file, data_dir or default
	// notFlag marks a setting only the environment gives (the S3 credentials).
	notFlag bool
}

// masked stands in for a secret's value.
const masked = "********"

func newConfigCommand() *cobra.Command {
	var o serveOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "config [serve flags]",
		Short: "Print the configuration serve would run with (flags, environment, defaults; secrets masked)",
		Long: "Print the configuration `convsvc serve` would run with, given the same flags and\n" +
			"environment: each setting's value and where it came from (flag, env, env_file,\n" +
			"data_dir or default). Secrets are masked. It refuses exactly the values serve refuses\n" +
			"(every flag's range), so it also works as a dry run.",
		Example: "  CONVSVC_LISTEN=0.0.0.0:8080 convsvc config\n  convsvc config --data /var/lib/convsvc --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			for _, w := range o.warnings() {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+w)
			}
			entries := effectiveConfig(cmd.Flags(), &o)
			out := cmd.OutOrStdout()
			if jsonOut {
				m := make(map[string]configEntry, len(entries))
				for _, e := range entries {
					m[e.Flag] = e
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(m)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FLAG\tVALUE\tSOURCE\tENVIRONMENT")
			for _, e := range entries {
				name := "--" + e.Flag
				if e.notFlag {
					name = "(" + e.Flag + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, orDash(e.Value), e.Source, e.Env)
			}
			return tw.Flush()
		},
	}
	addServeFlags(cmd.Flags(), &o)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON: an object keyed by flag name")
	return cmd
}

// effectiveConfig lists every serve flag with the value serve would use and its source.
// Defaults serve derives at start (workers, public URLs) are shown resolved.
// Flags that do not apply to the object storage in use are left out: --blob-* with S3's, the
// --s3-* flags with the built-in blob store.
func effectiveConfig(fs *pflag.FlagSet, o *serveOptions) []configEntry {
	var entries []configEntry
	_, _, s3, _ := service.ParseObjectStorage(o.cfg.ObjectStorage)
	workers := o.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	fileLimit := service.FileLimit()
	maxConns, perAddr := service.ConnectionLimits(fileLimit, workers, o.cfg.MaxConnections, o.cfg.MaxConnectionsPerAddress)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "json" || f.Name == "help" || s3 && strings.HasPrefix(f.Name, "blob-") || !s3 && strings.HasPrefix(f.Name, "s3-") {
			return
		}
		e := configEntry{Flag: f.Name, Env: envName(f.Name), Value: f.Value.String(), Source: "default"}
		_, fromEnv := os.LookupEnv(e.Env)
		_, fromFile := os.LookupEnv(e.Env + "_FILE")
		switch {
		case f.Changed:
			e.Source = "flag"
		case fromEnv:
			e.Source = "env"
		case fromFile && secretFlags[f.Name]:
			e.Source = "env_file"
		}
		if secretFlags[f.Name] {
			e.Env += ", " + e.Env + "_FILE"
		}
		switch f.Name {
		case "workers":
			e.Value = fmt.Sprint(workers)
		case "max-connections":
			e.Value = connectionCap(maxConns)
			if o.cfg.MaxConnections == 0 && fileLimit > 0 {
				e.Value += fmt.Sprintf(" (from the open-file limit, %d)", fileLimit)
			}
		case "max-connections-per-address":
			e.Value = connectionCap(perAddr)
		case "max-conversion-memory":
			if o.cfg.MaxConversionMemory <= 0 {
				m := convert.Limits{}.Normalized().MaxConversionMemory
				e.Value = fmt.Sprintf("%s, %d bytes (half of the memory this process may use)", bytesize.Format(m), m)
			}
		case "isolation":
			if e.Value == service.IsolationProcess {
				e.Value += " (" + probeConfinement(o) + ")"
			}
		case "public-url":
			if e.Value == "" {
				e.Value = "http://" + o.cfg.Listen
			}
		case "blob-public-url":
			if e.Value == "" {
				e.Value = "http://" + o.cfg.BlobListen
			}
		case "trusted-proxies":
			e.Value = strings.Trim(e.Value, "[]")
		case "cors-origins":
			if len(o.cfg.CORSOrigins) == 0 {
				e.Value = "(the origin of --public-url)"
				if o.cfg.PublicURL == "" && unspecifiedHost(o.cfg.Listen) {
					e.Value = "(http://127.0.0.1, http://localhost and http://[::1] on --listen's port: --public-url is unset and --listen is every address)"
				}
			}
		case "gc-heap-floor":
			if gcfloor.OverriddenByGOGC() {
				e.Value += " (off: GOGC is set)"
			}
		case "database":
			switch {
			case e.Value == "":
				e.Value = filepath.Join(o.cfg.DataDir, "convsvc.db")
			case service.IsPostgresURL(e.Value):
				e.Value = service.MaskDatabaseURL(e.Value)
				if _, ok := os.LookupEnv(databasePasswordFileEnv); ok {
					e.Value += " (password from " + databasePasswordFileEnv + ")"
				}
			}
		case "object-storage":
			if e.Value == "" {
				e.Value = "(blob store in " + filepath.Join(o.cfg.DataDir, "blobs") + ")"
			}
		case "s3-region":
			if e.Value == "" {
				if v := os.Getenv(awsRegionEnv); v != "" {
					e.Value, e.Source = v, "env"
				}
				e.Env += ", " + awsRegionEnv
			}
		case "s3-path-style":
			if e.Value == "auto" {
				e.Value = fmt.Sprintf("auto (%v)", o.cfg.S3.UsesPathStyle())
			}
		case "admin-token":
			switch {
			case e.Value != "":
				e.Value = masked
			case fileExists(filepath.Join(o.cfg.DataDir, "admin.token")):
				e.Value, e.Source = masked, "data_dir"
			default:
				e.Value = "(generated into " + filepath.Join(o.cfg.DataDir, "admin.token") + " on first start)"
			}
		}
		entries = append(entries, e)
	})
	if s3 {
		entries = append(entries, s3CredentialEntries()...)
	}
	return entries
}

// s3CredentialEntries shows where the S3 credentials come from, masked: the access key id
// keeps its first four characters (AKIA... tells a long-term key from ASIA..., a temporary one).
func s3CredentialEntries() []configEntry {
	var entries []configEntry
	for _, c := range []struct{ name, env string }{
		{"s3-access-key-id", awsAccessKeyEnv}, {"s3-secret-access-key", awsSecretKeyEnv}, {"s3-session-token", awsSessionTokenEnv},
	} {
		e := configEntry{Flag: c.name, Env: c.env + ", " + c.env + "_FILE", Source: "default", notFlag: true}
		v, err := envOrFile(c.env)
		_, fromEnv := os.LookupEnv(c.env)
		switch {
		case err != nil:
			e.Value, e.Source = "(unreadable: "+err.Error()+")", "env_file"
		case v == "":
			e.Value = "(none)"
			if c.env == awsAccessKeyEnv {
				e.Value = "(none: the AWS SDK's default chain: profile, web identity, container or instance role)"
			}
		default:
			e.Source = "env_file"
			if fromEnv {
				e.Source = "env"
			}
			e.Value = masked
			if c.env == awsAccessKeyEnv && len(v) > 4 {
				e.Value = v[:4] + masked
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// connectionCap shows a connection cap: a number, or "no cap" for 0.
func connectionCap(n int) string {
	if n == 0 {
		return "no cap"
	}
	return fmt.Sprint(n)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// probeConfinement starts one worker process as serve would and says what confinement it
// applied, or why it did not start.
func probeConfinement(o *serveOptions) string {
	conf, err := worker.Probe(worker.Config{FontDir: o.fontDir, Command: o.cfg.WorkerCommand})
	if err != nil {
		return "workers do not start here: " + err.Error() + "; --isolation none runs conversions in the server's process"
	}
	return strings.Join(conf, "; ")
}
