package convert

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxPixels is the pixel limit used when Limits.MaxPixels is zero.
const DefaultMaxPixels = 100_000_000

// ErrUnsupported reports that no chain of converters leads from one format to another.
var ErrUnsupported = errors.New("unsupported conversion")

// Error is a conversion failure whose Message is safe to show to the API user.
type Error struct {
	// Message explains the failure to the user, e.g. "input is not a valid PNG file (it looks like JPEG)".
	Message string
	// Err is the underlying cause, for logs and errors.Is; it may be nil.
	Err error
	// Reason is a finer failure code for the Job's error_reason (ReasonOutputTooLarge, ...);
	// empty when error_code says all there is.
	Reason string
}

// ReasonOutputTooLarge: the output does not fit the job's max_bytes, even at the lowest
// quality a max_bytes search tries.
const ReasonOutputTooLarge = "output_too_large"

// ErrorReason returns the Reason of the first *Error in err's chain that has one, or "".
func ErrorReason(err error) string {
	for err != nil {
		if e, ok := err.(*Error); ok && e.Reason != "" {
			return e.Reason
		}
		err = errors.Unwrap(err)
	}
	return ""
}

// Error returns the message followed by the underlying cause, for logs.
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted user message and the given cause.
func Errorf(cause error, format string, args ...any) *Error {
	return &Error{Message: fmt.Sprintf(format, args...), Err: cause}
}

// Format categories.
const (
	CategoryImage    = "image"
	CategoryDocument = "document"
	CategoryData     = "data"
	CategoryAudio    = "audio"
	CategoryArchive  = "archive"
)

// Format describes a file format the service recognizes (JSON shape is the API's Format object).
type Format struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Category   string   `json:"category"`   // image, document, data, audio, archive
	Extensions []string `json:"extensions"` // without dots, e.g. ["jpg","jpeg"]
	MIME       string   `json:"mime"`
	// Options lists the conversion options accepted when this format is the target; it is not
	// part of the Format object of the API (GET /v1/formats/{id} shows it separately).
	Options []string `json:"-"`
	// MultiPage marks formats that hold several pages in one file (TIFF, PDF): several pages
	// selected by the pages option stay one file of this format rather than a zip.
	MultiPage bool `json:"-"`
}

// clone returns a copy of f that shares no memory with it.
func (f Format) clone() Format {
	f.Extensions = slices.Clone(f.Extensions)
	f.Options = slices.Clone(f.Options)
	return f
}

// Limits bounds the resources a single conversion may use.
type Limits struct {
	// MaxPixels is the largest width*height accepted for an image (frames*width*height for
	// animations); zero means DefaultMaxPixels.
	MaxPixels int64
	// MaxConversionMemory bounds, in bytes, the memory that the catalog's running conversions
	// are estimated to need together; a conversion that would exceed it waits for others to
	// finish, and one that alone exceeds it fails. Zero means DefaultConversionMemory().
	MaxConversionMemory int64
	// MaxOutputRatio bounds each step's output relative to the conversion's input: a step may
	// write OutputRatioFloor, or MaxOutputRatio times the input, whichever is more. Steps to
	// raster images are bounded by MaxPixels instead. Zero means DefaultMaxOutputRatio.
	MaxOutputRatio float64
	// MaxOutputBytes bounds each step's output absolutely; zero means DefaultMaxOutputBytes.
	MaxOutputBytes int64
}

// Normalized returns l with defaults filled in.
func (l Limits) Normalized() Limits {
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	if l.MaxConversionMemory <= 0 {
		l.MaxConversionMemory = defaultConversionMemory()
	}
	if l.MaxOutputRatio <= 0 {
		l.MaxOutputRatio = DefaultMaxOutputRatio
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// Converter is one edge of the conversion graph: it turns format From into format To.
type Converter struct {
	// From and To are format ids registered in the same Catalog.
	From, To string
	// Lossy marks conversions that can lose information; path search avoids them when it can.
	Lossy bool
	// Run reads the whole input from in and streams the result to out; it should return
	// an *Error for problems the user can fix and honour ctx between stages. It must not
	// touch out once it has returned.
	Run func(ctx context.Context, in *io.SectionReader, out io.Writer, p Params) error
	// Drops lists the warning codes (WarningCodes) Run may report through Params.Warn, when
	// the input holds something the target cannot keep; docs/formats.md shows them per pair.
	Drops []string
	// Version names the code that produces this converter's output (a family's version
	// string, raised whenever its encoders or decoders change what they write). The
	// conversion cache keys outputs by the versions along the path (PathVersion), so a codec
	// change never serves an output the old code made; a path with an unversioned converter
	// is never cached.
	Version string
	// Counts marks a Run that reports how much of its work it has done through
	// Params.Progress (pages, entries, rows, samples): a path with such a step takes its
	// job's progress from the counts, not from how far the input was read (progress.go).
	Counts bool
}

// Step is one hop of a conversion path.
type Step struct {
	From, To string
	Lossy    bool
}

// Catalog is a registry of formats and the converters between them.
//
// Registration (AddFormat, AddConverter) and lookups may be called concurrently.
type Catalog struct {
	lim    Limits
	budget *memBudget // shared by the catalog's conversions, sized by lim.MaxConversionMemory

	mu      sync.RWMutex
	formats map[string]Format
	out     map[string][]Converter // by From, sorted by To
	// verifiers holds each output format's check (AddVerifier); nil until one is added.
	verifiers map[string]Verifier

	// paths memoises Path by [from, to]: every create asks it, and the search allocates a
	// map per call (43% of the create handler's CPU in the API profile). Registration clears it.
	paths sync.Map // [2]string -> pathResult
}

// pathResult is one memoised answer of Path.
type pathResult struct {
	steps []Step
	err   error
}

// NewEmptyCatalog returns a catalog with no formats and no converters.
func NewEmptyCatalog(lim Limits) *Catalog {
	lim = lim.Normalized()
	return &Catalog{
		lim:     lim,
		budget:  newMemBudget(lim.MaxConversionMemory),
		formats: make(map[string]Format),
		out:     make(map[string][]Converter),
	}
}

// Limits returns the limits the catalog's conversions run with.
func (c *Catalog) Limits() Limits { return c.lim }

// AddFormat registers a format; it panics on an empty or duplicate id, since that is a programming error.
func (c *Catalog) AddFormat(f Format) {
	if f.ID == "" {
		panic("convert: AddFormat with empty id")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.formats[f.ID]; dup {
		panic("convert: duplicate format " + f.ID)
	}
	c.formats[f.ID] = f.clone()
	c.paths.Clear()
}

// AddConverter registers a converter; it panics when a format is unknown, Run is nil or the
// pair already has a converter, since those are programming errors. A converter whose From
// equals To is a transform within the format (resize, rotate, select pages): Path uses it
// only for that pair, never inside a chain.
func (c *Catalog) AddConverter(cv Converter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.paths.Clear()
	if _, ok := c.formats[cv.From]; !ok {
		panic("convert: AddConverter from unknown format " + cv.From)
	}
	if _, ok := c.formats[cv.To]; !ok {
		panic("convert: AddConverter to unknown format " + cv.To)
	}
	if cv.Run == nil {
		panic("convert: AddConverter with nil Run: " + cv.From + " to " + cv.To)
	}
	for _, code := range cv.Drops {
		if !slices.Contains(WarningCodes, code) {
			panic("convert: AddConverter with unknown warning code " + code + ": " + cv.From + " to " + cv.To)
		}
	}
	list := c.out[cv.From]
	i, found := slices.BinarySearchFunc(list, cv.To, func(e Converter, to string) int { return cmp.Compare(e.To, to) })
	if found {
		panic("convert: duplicate converter " + cv.From + " to " + cv.To)
	}
	c.out[cv.From] = slices.Insert(list, i, cv)
}

// Formats returns every recognised format, sorted by ID; the slice is the caller's to keep.
func (c *Catalog) Formats() []Format {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fs := make([]Format, 0, len(c.formats))
	for _, f := range c.formats {
		fs = append(fs, f.clone())
	}
	slices.SortFunc(fs, func(a, b Format) int { return cmp.Compare(a.ID, b.ID) })
	return fs
}

// Format returns the format with the given id.
func (c *Catalog) Format(id string) (Format, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.formats[id]
	return f.clone(), ok
}

// FormatOfName is the id of the format whose extension ends the file name (case aside), the
// longest extension winning ("x.tar.gz" is tar.gz, not gz); "" when none does.
func (c *Catalog) FormatOfName(name string) string {
	name = strings.ToLower(filepath.Base(name))
	best, bestLen := "", 0
	for _, f := range c.Formats() {
		for _, ext := range f.Extensions {
			if strings.HasSuffix(name, "."+ext) && len(ext) > bestLen {
				best, bestLen = f.ID, len(ext)
			}
		}
	}
	return best
}

// pathCost orders paths: fewest lossy steps first, then fewest steps.
type pathCost struct{ lossy, steps int }

func (a pathCost) less(b pathCost) bool {
	if a.lossy != b.lossy {
		return a.lossy < b.lossy
	}
	return a.steps < b.steps
}

// MaxCategoryChanges bounds how often a chained conversion may cross from one category to
// another (data -> document -> image would be two). Chains like markdown -> pdf -> png stay
// possible; csv -> html -> pdf -> png, which nobody asks for and which would make every format
// reach every other, do not.
const MaxCategoryChanges = 1

// state is a node of the search: a format, the category changes spent reaching it, and whether
// the chain just left the image category (after which it must stop: an image rendered into a
// PDF has no text, so png -> pdf -> txt or -> html would only pretend to convert).
type state struct {
	id      string
	changes int
	final   bool
}

// step follows one edge from s; ok is false when the chain would cross categories too often or
// go on after leaving the image category. c.mu must be held.
func (c *Catalog) step(s state, to string) (state, bool) {
	if s.final {
		return state{}, false
	}
	from, dest := c.formats[s.id].Category, c.formats[to].Category
	n := s.changes
	if from != dest {
		n++
	}
	return state{id: to, changes: n, final: from == CategoryImage && dest != CategoryImage}, n <= MaxCategoryChanges
}

// stateLess orders states for stable tie-breaking.
func stateLess(a, b state) bool {
	if a.id != b.id {
		return a.id < b.id
	}
	if a.changes != b.changes {
		return a.changes < b.changes
	}
	return !a.final && b.final
}

// Path returns the cheapest chain of converters from one format to another: fewest lossy
// steps, then fewest steps, ties broken by format id so the answer is stable, crossing
// categories at most MaxCategoryChanges times. From equal to to is the format's own transform
// converter, a path of one step. It returns an error wrapping ErrUnsupported when either is
// unknown, or to is unreachable (from equals to and the format has no transform).
func (c *Catalog) Path(from, to string) ([]Step, error) {
	key := [2]string{from, to}
	if r, ok := c.paths.Load(key); ok {
		r := r.(pathResult)
		return slices.Clone(r.steps), r.err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	steps, err := c.findPath(from, to)
	if len(c.formats) > 0 && (err == nil || (c.formats[from].ID != "" && c.formats[to].ID != "")) {
		// Unknown ids are not memoised: they come from clients and would grow the cache.
		c.paths.Store(key, pathResult{steps: slices.Clone(steps), err: err})
	}
	return steps, err
}

// findPath is Path's search; c.mu must be held.
func (c *Catalog) findPath(from, to string) ([]Step, error) {
	if _, ok := c.formats[from]; !ok {
		return nil, fmt.Errorf("unknown format %q: %w", from, ErrUnsupported)
	}
	if _, ok := c.formats[to]; !ok {
		return nil, fmt.Errorf("unknown format %q: %w", to, ErrUnsupported)
	}
	if from == to {
		if c.hasSelf(from) {
			return []Step{{From: from, To: to, Lossy: c.selfConverter(from).Lossy}}, nil
		}
		return nil, fmt.Errorf("%s to itself: %w", from, ErrUnsupported)
	}

	// Dijkstra over a graph of a few dozen nodes: a linear scan for the minimum is plenty.
	type node struct {
		cost pathCost
		prev Converter
		from state
		done bool
	}
	start := state{id: from}
	nodes := map[state]*node{start: {}}
	var end state
	for {
		var curS state
		var cur *node
		for s, n := range nodes {
			if n.done {
				continue
			}
			if cur == nil || n.cost.less(cur.cost) || (n.cost == cur.cost && stateLess(s, curS)) {
				curS, cur = s, n
			}
		}
		if cur == nil {
			return nil, fmt.Errorf("no converter chain from %s to %s: %w", from, to, ErrUnsupported)
		}
		cur.done = true
		if curS.id == to {
			end = curS
			break
		}
		for _, cv := range c.out[curS.id] {
			if cv.To == cv.From {
				continue // a transform is a path of its own, never a hop of a chain
			}
			next, ok := c.step(curS, cv.To)
			if !ok {
				continue
			}
			nc := pathCost{lossy: cur.cost.lossy, steps: cur.cost.steps + 1}
			if cv.Lossy {
				nc.lossy++
			}
			n, seen := nodes[next]
			if !seen {
				nodes[next] = &node{cost: nc, prev: cv, from: curS}
			} else if !n.done && nc.less(n.cost) {
				n.cost, n.prev, n.from = nc, cv, curS
			}
		}
	}
	var steps []Step
	for s := end; s != start; {
		n := nodes[s]
		steps = append(steps, Step{From: n.prev.From, To: n.prev.To, Lossy: n.prev.Lossy})
		s = n.from
	}
	slices.Reverse(steps)
	return steps, nil
}

// Targets returns every format id reachable from id, directly or by chaining converters,
// sorted; id itself when the format has a transform converter.
func (c *Catalog) Targets(id string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	found := c.reach(id, func(n string) []string {
		var next []string
		for _, cv := range c.out[n] {
			if cv.To != cv.From {
				next = append(next, cv.To)
			}
		}
		return next
	})
	if c.hasSelf(id) {
		found = append(found, id)
		slices.Sort(found)
	}
	return found
}

// hasSelf reports whether format id has a transform converter (From == To); c.mu must be held.
func (c *Catalog) hasSelf(id string) bool { return c.selfConverter(id).Run != nil }

// selfConverter returns format id's transform converter, or the zero Converter; c.mu must be held.
func (c *Catalog) selfConverter(id string) Converter {
	list := c.out[id]
	i, found := slices.BinarySearchFunc(list, id, func(e Converter, to string) int { return cmp.Compare(e.To, to) })
	if !found {
		return Converter{}
	}
	return list[i]
}

// Sources returns every format id from which id can be reached, sorted. The chain rules are
// not symmetric (an image may leave its category only at a chain's last step), so each
// candidate is asked forwards; the graph is a few dozen formats.
func (c *Catalog) Sources(id string) []string {
	c.mu.RLock()
	_, known := c.formats[id]
	ids := slices.Collect(maps.Keys(c.formats))
	c.mu.RUnlock()
	found := []string{}
	if !known {
		return found
	}
	for _, from := range ids {
		if from == id {
			c.mu.RLock()
			self := c.hasSelf(id)
			c.mu.RUnlock()
			if self {
				found = append(found, id)
			}
			continue
		}
		if slices.Contains(c.Targets(from), id) {
			found = append(found, from)
		}
	}
	slices.Sort(found)
	return found
}

// reach walks the graph forwards from start under the chain rules of step and returns every
// other format it finds, sorted; c.mu must be held.
func (c *Catalog) reach(start string, next func(string) []string) []string {
	if _, ok := c.formats[start]; !ok {
		return []string{}
	}
	seen := map[state]bool{{id: start}: true}
	queue := []state{{id: start}}
	found := map[string]bool{}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, m := range next(s.id) {
			ns, ok := c.step(s, m)
			if !ok || seen[ns] {
				continue
			}
			seen[ns] = true
			if m != start {
				found[m] = true
			}
			queue = append(queue, ns)
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// PathVersion is the version of the conversion from one format to another: each step of
// Path's chain with its converter's Version ("png>webp@image/1"), joined by spaces. ok is
// false when there is no path or a converter on it has no Version; such a conversion is never
// cached.
func (c *Catalog) PathVersion(from, to string) (version string, ok bool) {
	steps, err := c.Path(from, to)
	if err != nil || len(steps) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, st := range steps {
		cv, found := c.ConverterFor(st)
		if !found || cv.Version == "" {
			return "", false
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(st.From + ">" + st.To + "@" + cv.Version)
	}
	return b.String(), true
}

// ConverterFor returns the registered converter for one step.
func (c *Catalog) ConverterFor(s Step) (Converter, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	list := c.out[s.From]
	i, found := slices.BinarySearchFunc(list, s.To, func(e Converter, to string) int { return cmp.Compare(e.To, to) })
	if !found {
		return Converter{}, false
	}
	return list[i], true
}

// Counts reports whether the conversion from -> to counts its own progress: a converter on
// its path is marked Counts, so its progress is its counts (Params.Progress) from the start,
// never how far it has read its input. False when there is no such path.
func (c *Catalog) Counts(from, to string) bool {
	path, err := c.Path(from, to)
	if err != nil {
		return false
	}
	for _, s := range path {
		if cv, ok := c.ConverterFor(s); ok && cv.Counts {
			return true
		}
	}
	return false
}

// Convert converts in (format from) to format to, streaming the result to out, and returns
// the warnings its converters reported (Params.Warn), nil when none. Intermediate results of a multi-step path go to temporary files in scratchDir (created if
// missing), which are removed whatever happens; converters get scratchDir as
// Params.ScratchDir for temporary files of their own. Every failure is returned as an *Error;
// panics in converters are recovered into one. On failure out may have received part of a
// result, so callers write to something they can throw away.
func (c *Catalog) Convert(ctx context.Context, from, to string, opts Options, in *os.File, out io.Writer, scratchDir string) ([]Warning, error) {
	w := &warnings{}
	err := c.convert(ctx, from, to, opts, in, out, scratchDir, w)
	return w.get(), err
}

// convert is Convert with the warning collector its steps report to.
func (c *Catalog) convert(ctx context.Context, from, to string, opts Options, in *os.File, out io.Writer, scratchDir string, w *warnings) error {
	path, err := c.Path(from, to)
	if err != nil {
		return Errorf(err, "cannot convert %s to %s", from, to)
	}
	fi, err := in.Stat()
	if err != nil {
		return Errorf(err, "could not read the input")
	}
	var cur io.ReaderAt = &offsetMark{f: in} // the input's offset tells its progress (progress.go)
	size := fi.Size()
	inputSize := size
	steps := make([]Converter, len(path))
	counts := false
	for i, s := range path {
		cv, ok := c.ConverterFor(s)
		if !ok {
			return Errorf(ErrUnsupported, "cannot convert %s to %s", s.From, s.To)
		}
		steps[i], counts = cv, counts || cv.Counts
	}
	if counts {
		// The path counts its work: its counts are the progress from the start, so the
		// input's offset (a decoder reading it all at once) never shows a jump first.
		ReportProgress(ctx, 0)
	}
	for i, s := range path {
		if err := ctx.Err(); err != nil {
			return ctxError(ctx)
		}
		cv := steps[i]
		var sp *stepProgress
		if counts {
			// Each step has an equal share; a step that does not count moves the
			// progress when it ends.
			sp = &stepProgress{ctx: ctx, base: float64(i) / float64(len(path)), span: 1 / float64(len(path))}
		}
		src := io.NewSectionReader(cur, 0, size)
		if i == len(path)-1 {
			if opts.MaxBytes > 0 {
				// Converters that cannot trade quality for size are held to max_bytes here.
				out = &maxBytesWriter{w: out, left: opts.MaxBytes, max: opts.MaxBytes, to: s.To}
			}
			return c.runStep(ctx, cv, src, c.limitOutput(out, s, inputSize), opts, scratchDir, w, sp)
		}
		tmp, err := os.CreateTemp(scratchDir, "step-*")
		if errors.Is(err, os.ErrNotExist) {
			if err = os.MkdirAll(scratchDir, 0o700); err == nil {
				tmp, err = os.CreateTemp(scratchDir, "step-*")
			}
		}
		if err != nil {
			return Errorf(err, "could not create a temporary file")
		}
		defer func() {
			tmp.Close()
			os.Remove(tmp.Name())
		}()
		cw := &CountingWriter{W: tmp}
		if err := c.runStep(ctx, cv, src, c.limitOutput(cw, s, inputSize), opts, scratchDir, w, sp); err != nil {
			return err
		}
		if counts {
			ReportProgress(ctx, float64(i+1)/float64(len(path)))
		}
		cur, size = tmp, cw.N
	}
	return nil // unreachable: Path never returns an empty path without error
}

// outputBuffers holds runStep's 64 KiB output buffers between conversions, so a small
// conversion does not allocate more for its buffer than for its pixels. A converter writes
// nothing once its Run has returned, so the buffer is free again when runStep returns.
var outputBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// runStep runs one converter with a buffered output, turning panics and plain errors into *Error.
func (c *Catalog) runStep(ctx context.Context, cv Converter, in *io.SectionReader, out io.Writer, opts Options, scratchDir string, w *warnings, sp *stepProgress) (err error) {
	rw := &recordingWriter{w: out}
	bw := outputBuffers.Get().(*bufio.Writer)
	bw.Reset(rw)
	defer func() {
		bw.Reset(nil)
		outputBuffers.Put(bw)
	}()
	defer func() {
		if r := recover(); r != nil {
			err = Errorf(fmt.Errorf("panic: %v\n%s", r, debug.Stack()), "internal error while converting %s to %s", cv.From, cv.To)
		}
	}()
	err = cv.Run(ctx, in, bw, Params{Limits: c.lim, Options: opts, Embedded: EmbeddedMemory{c.budget}, ScratchDir: scratchDir, warnings: w, progress: sp})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if rw.err != nil {
		if errors.Is(rw.err, ErrOutputTooLarge) {
			return rw.err // an *Error naming the limit
		}
		return Errorf(rw.err, "could not write the output")
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return Errorf(err, "converting %s to %s failed", cv.From, cv.To)
}

// ctxError describes why ctx ended as an *Error wrapping its cause.
func ctxError(ctx context.Context) *Error {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Message: "conversion timed out", Err: cause}
	}
	return &Error{Message: "conversion cancelled", Err: cause}
}

// recordingWriter remembers the first write error so that it can be told apart from codec errors.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// maxBytesWriter fails the write that would take the output past the job's max_bytes, with an
// *Error whose Reason is ReasonOutputTooLarge.
type maxBytesWriter struct {
	w         io.Writer
	left, max int64
	to        string
}

func (m *maxBytesWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > m.left {
		return 0, &Error{Reason: ReasonOutputTooLarge, Err: ErrOutputTooLarge,
			Message: fmt.Sprintf("the %s output is larger than max_bytes %d; raise max_bytes or ask for a smaller output", m.to, m.max)}
	}
	n, err := m.w.Write(p)
	m.left -= int64(n)
	return n, err
}
