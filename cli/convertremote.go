package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/convsvc/convsvc/client"
)

// remoteFlags are convert's remote-file flags (docs/remote.md).
type remoteFlags struct {
	sourceURL      string
	deliverTo      string
	deliverHeaders []string
	deliver        *client.DeliverTo // the parsed --deliver-to, for each file's create
}

// addRemoteFlags registers --source-url, --deliver-to and --deliver-header.
func (r *remoteFlags) addRemoteFlags(f *pflag.FlagSet) {
	f.StringVar(&r.sourceURL, "source-url", "", "convert the file at this http(s) URL, which the server fetches (no INPUT; --from defaults to the URL's extension)")
	f.StringVar(&r.deliverTo, "deliver-to", "", "also have the server PUT the output to this URL (a presigned upload URL); the job succeeds only on a 2xx answer")
	f.StringArrayVar(&r.deliverHeaders, "deliver-header", nil, `header sent with --deliver-to's PUT, "Name: value" (repeatable)`)
}

// delivery is the deliver_to of the flags, or nil.
func (r *remoteFlags) delivery() (*client.DeliverTo, error) {
	if r.deliverTo == "" {
		if len(r.deliverHeaders) > 0 {
			return nil, errors.New("--deliver-header needs --deliver-to")
		}
		return nil, nil
	}
	d := &client.DeliverTo{URL: r.deliverTo}
	for _, h := range r.deliverHeaders {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--deliver-header %q: write it as \"Name: value\"", h)
		}
		if d.Headers == nil {
			d.Headers = map[string]string{}
		}
		d.Headers[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return d, nil
}

// runRemote converts the file at --source-url: one create (the server fetches it and the job
// is queued at once), a wait, and the download.
func (o *convertOptions) runRemote(stdout, stderr io.Writer, parent context.Context, inputs []string) error {
	if len(inputs) > 0 {
		return fmt.Errorf("--source-url names the input: drop the INPUT arguments (%s)", strings.Join(inputs, " "))
	}
	if err := o.checkArgs(nil); err != nil {
		return err
	}
	u, err := url.Parse(o.sourceURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--source-url %q: give an http or https URL", o.sourceURL)
	}
	deliver, err := o.delivery()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.server == "" {
		stopEmbedded, err := o.startEmbedded(stderr)
		if err != nil {
			return err
		}
		defer stopEmbedded()
	} else if o.key == "" {
		return errors.New("--server needs an API key: pass --key or set CONVSVC_KEY")
	}
	c := &client.Client{BaseURL: o.server, Key: o.key, WaitOutRateLimit: true}
	formats, err := c.Formats(ctx)
	if err != nil {
		return reachable(fmt.Errorf("list formats: %w", err), o.server)
	}
	target, ok := findFormat(formats, o.to)
	if !ok {
		return unknownFormat(formats, "unknown target format %q", o.to)
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." {
		name = "download"
	}
	from := o.from
	if from == "" {
		f, ok := formatByExtension(formats, strings.ToLower(strings.TrimPrefix(path.Ext(name), ".")))
		if !ok {
			return fmt.Errorf("--source-url %s: its extension names no format; give --from", o.sourceURL)
		}
		from = f.ID
	}
	out := o.output
	if out == "" {
		out = filepath.Join(o.outputDir, strings.TrimSuffix(name, path.Ext(name))+"."+outputExtension(target, kernelOptions(o.opts)))
	}
	if out != stdio {
		if err := checkOutput(out, o.force); err != nil {
			return err
		}
	}
	// input_bytes bounds the fetch: any size the server takes.
	req := client.CreateJobRequest{InputFormat: from, TargetFormat: target.ID, InputBytes: client.MaxInputBytes, Preset: o.preset, SourceURL: o.sourceURL, DeliverTo: deliver}
	if !o.opts.IsZero() {
		req.Options = &o.opts
	}
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := c.CreateJob(rctx, req, randomToken())
	if err != nil {
		return err
	}
	job, err := c.WaitJob(rctx, res.Job.ID, nil)
	if err != nil {
		if !job.Finished() {
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_, _ = c.CancelJob(cctx, res.Job.ID)
			ccancel()
		}
		return err
	}
	if job.Status != client.StatusSucceeded || job.Output == nil {
		return fmt.Errorf("%s: job %s %s", redactedURL(o.sourceURL), job.ID, job.Error())
	}
	if out == stdio {
		_, err = c.DownloadTo(rctx, *job.Output, stdout)
		stdout = stderr
	} else {
		err = o.download(rctx, c, job, out, nil)
	}
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%s -> %s (%s, %s)", redactedURL(o.sourceURL), out, plural(job.Output.Bytes, "byte", "bytes"), job.ID)
	if deliver != nil {
		line += ", delivered to " + job.DeliverTo.URL
	}
	if o.jsonOut {
		b, _ := json.Marshal(job)
		line = string(b)
	}
	fmt.Fprintln(stdout, line)
	return nil
}

// redactedURL is a URL as the CLI prints it: the query (a presigned signature) hidden.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.User = nil
	return u.String()
}
