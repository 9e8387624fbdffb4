package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// ReasonOutputInvalid: the output failed the re-read check of its format (Catalog.Verify).
const ReasonOutputInvalid = "output_invalid"

// ErrOutputInvalid is wrapped by the *Error of a conversion whose output failed its check.
var ErrOutputInvalid = errors.New("output failed its check")

// Check is what a Verifier knows of the conversion whose output it re-reads.
type Check struct {
	// InputFormat is the job's input format; Format is the output's (Catalog.OutputFormat:
	// the target, or zip for several pages).
	InputFormat, Format string
	// Options are the job's options, whose promises (width, height, pages...) the check holds.
	Options Options
	// Input is the job's input, for checks that compare the output with it (an audio
	// duration, a count of records).
	Input *io.SectionReader
	// Limits are the catalog's: a check decodes nothing larger than a conversion could.
	Limits Limits
}

// Verifier re-reads an output of one format with a reader independent of the encoder that
// wrote it and returns an error saying what is wrong, or nil when the output holds what the
// request promised. It must honour ctx and may not keep out or c.Input past its return.
type Verifier func(ctx context.Context, out *io.SectionReader, c Check) error

// AddVerifier registers the check of outputs of format id; it panics when the format is
// unknown or already has one, since those are programming errors. Each family registers the
// checks of its formats in its Register.
func (c *Catalog) AddVerifier(id string, v Verifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.formats[id]; !ok {
		panic("convert: AddVerifier for unknown format " + id)
	}
	if v == nil {
		panic("convert: AddVerifier with nil verifier: " + id)
	}
	if c.verifiers == nil {
		c.verifiers = make(map[string]Verifier)
	}
	if _, dup := c.verifiers[id]; dup {
		panic("convert: duplicate verifier for " + id)
	}
	c.verifiers[id] = v
}

// verifier returns the check of outputs of format id, or nil.
func (c *Catalog) verifier(id string) Verifier {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.verifiers[id]
}

// Verifies reports whether an output of a job converting to target with o is checked by
// Verify (its output format has a Verifier).
func (c *Catalog) Verifies(target string, o Options) bool {
	return c.verifier(c.OutputFormat(target, o).ID) != nil
}

// Verify re-reads the output of a conversion from -> to with o (out, of size bytes) with the
// Verifier of its output format. It returns false and nil when that format has none, true and
// nil when the output passed, and an *Error with Reason ReasonOutputInvalid (wrapping
// ErrOutputInvalid) when it failed; ctx's cause once ctx is done. A Verifier's panic is a
// failed check: the output is hostile to the reader, and the service must not ship it.
func (c *Catalog) Verify(ctx context.Context, from, to string, o Options, in *os.File, out io.ReaderAt, size int64) (verified bool, err error) {
	f := c.OutputFormat(to, o)
	v := c.verifier(f.ID)
	if v == nil {
		return false, nil
	}
	chk := Check{InputFormat: from, Format: f.ID, Options: o, Limits: c.lim}
	if in != nil {
		st, err := in.Stat()
		if err != nil {
			return false, fmt.Errorf("verify: stat input: %w", err)
		}
		chk.Input = io.NewSectionReader(in, 0, st.Size())
	}
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the reader panicked: %v\n%s", r, debug.Stack())
			}
		}()
		return v(ctx, io.NewSectionReader(out, 0, size), chk)
	}()
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	if err != nil {
		return false, OutputInvalid(f.Name, err)
	}
	return true, nil
}

// OutputInvalid returns the *Error of an output of the named format that failed its check
// for the reason err gives.
func OutputInvalid(formatName string, err error) *Error {
	msg := err.Error()
	var ce *Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return &Error{Reason: ReasonOutputInvalid, Err: fmt.Errorf("%w: %w", ErrOutputInvalid, err),
		Message: fmt.Sprintf("the %s output failed its check after the conversion: %s", formatName, msg)}
}

// ReadableOutput is an OutputFile whose written bytes can be read back before Commit, so the
// pool checks them (Catalog.Verify) before the job succeeds.
type ReadableOutput interface {
	// Written returns the bytes written so far and their count; out stays valid until
	// Commit or Discard.
	Written() (out io.ReaderAt, size int64, err error)
}

// OutputVerifier is a Runner that checks each output itself (Catalog.Verify, in the process
// that converted it) and fails the conversion when the check fails.
type OutputVerifier interface {
	VerifiesOutputs() bool
}
