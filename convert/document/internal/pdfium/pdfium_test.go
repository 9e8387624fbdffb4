package pdfium

import (
	"bytes"
	"context"
	"image"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// TestWarmUp_PDFRenders holds warmPDF to a page PDFium opens, reads and renders: one 72x72
// page whose text is "Warm up" and whose image is drawn (a warm-up whose PDF failed to open
// would make no call and warm nothing).
func TestWarmUp_PDFRenders(t *testing.T) {
	pool, err := get()
	if err != nil {
		t.Fatal(err)
	}
	pdf := warmPDF()
	s, err := open(context.Background(), pool, io.NewSectionReader(bytes.NewReader(pdf), 0, int64(len(pdf))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Pages() != 1 {
		t.Fatalf("%d pages, want 1", s.Pages())
	}
	text, err := s.Text(0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(text) != "Warm up" {
		t.Fatalf("text %q, want %q", text, "Warm up")
	}
	var size image.Point
	var dark bool
	err = s.Render(0, 72, func(img image.Image) error {
		size = img.Bounds().Size()
		// The image spans (4,4)-(20,20) in PDF space, y upwards, so rows 52 to 68 from the
		// top; its top rows are dark.
		r, g, b, _ := img.At(6, 54).RGBA()
		dark = r+g+b < 3*0x8000
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if size != (image.Point{72, 72}) {
		t.Fatalf("rendered %v, want 72x72", size)
	}
	if !dark {
		t.Fatal("the image's dark corner did not render at (6,54)")
	}
}

// invokeCalls records which of PDFium's emscripten invoke_ imports exist and were called.
type invokeCalls struct {
	mu      sync.Mutex
	defined map[string]bool
	called  map[string]bool
}

// listener records a call of one invoke_ import.
type listener struct {
	calls *invokeCalls
	name  string
}

func (l listener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	l.calls.mu.Lock()
	defer l.calls.mu.Unlock()
	l.calls.called[l.name] = true
}

func (listener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (listener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

// TestWarmUp_CallsEveryInvokeImport holds warmUp to its purpose: on a pool of its own whose
// host functions are watched (wazero's function listeners), warmUp calls every invoke_ import
// PDFium's module has, so that no concurrent session makes the first call of one
// (tetratelabs/wazero#2520). A new go-pdfium whose module imports another invoke_ type fails
// here until warmPDF reaches it too.
func TestWarmUp_CallsEveryInvokeImport(t *testing.T) {
	calls := &invokeCalls{defined: map[string]bool{}, called: map[string]bool{}}
	factory := experimental.FunctionListenerFactoryFunc(func(def api.FunctionDefinition) experimental.FunctionListener {
		if def.ModuleName() != "env" || !strings.HasPrefix(def.Name(), "invoke_") {
			return nil
		}
		calls.mu.Lock()
		defer calls.mu.Unlock()
		calls.defined[def.Name()] = true
		return listener{calls, def.Name()}
	})
	config := poolConfig(1, true)
	config.Context = experimental.WithFunctionListenerFactory(config.Context, factory)
	pool, err := webassembly.Init(config)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	warmUp(pool)

	calls.mu.Lock()
	defer calls.mu.Unlock()
	var defined, missed []string
	for name := range calls.defined {
		defined = append(defined, name)
		if !calls.called[name] {
			missed = append(missed, name)
		}
	}
	slices.Sort(defined)
	slices.Sort(missed)
	if len(defined) == 0 {
		t.Fatal("the env module defines no invoke_ function: the listener saw nothing, so this test would pass whatever warmUp did")
	}
	if len(missed) > 0 {
		t.Fatalf("warmUp called %d of the invoke_ imports %v; never %v", len(defined)-len(missed), defined, missed)
	}
}
