package convert

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
)

// TestCatalog_Convert_Warnings: every step of a chained conversion reports to one collector;
// the first warning of each code is kept in order, and concurrent reports are all seen.
func TestCatalog_Convert_Warnings(t *testing.T) {
	c := NewEmptyCatalog(Limits{})
	for _, id := range []string{"a", "b", "c", "d"} {
		c.AddFormat(Format{ID: id, Name: id, Category: "data", Extensions: []string{id}, MIME: "x/" + id})
	}
	c.AddConverter(Converter{From: "a", To: "b", Run: func(_ context.Context, in *io.SectionReader, out io.Writer, p Params) error {
		p.Warn(WarnSheetsDropped, "sheets B, C were not converted")
		p.Warn(WarnSheetsDropped, "a second report of the same code is dropped")
		_, err := io.Copy(out, in)
		return err
	}})
	c.AddConverter(Converter{From: "b", To: "c", Run: func(_ context.Context, in *io.SectionReader, out io.Writer, p Params) error {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Warn(WarnMetadataDropped, fmt.Sprintf("report %d", i))
			}()
		}
		wg.Wait()
		_, err := io.Copy(out, in)
		return err
	}})
	c.AddConverter(Converter{From: "c", To: "d", Run: appendRun("")})

	ws, err := c.Convert(context.Background(), "a", "c", Options{}, writeTemp(t, []byte("x")), io.Discard, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0] != (Warning{WarnSheetsDropped, "sheets B, C were not converted"}) || ws[1].Code != WarnMetadataDropped {
		t.Errorf("warnings = %+v, want sheets_dropped (first message) then one metadata_dropped", ws)
	}

	// A conversion that reports nothing returns nil, and a second conversion starts afresh.
	ws, err = c.Convert(context.Background(), "c", "d", Options{}, writeTemp(t, []byte("x")), io.Discard, t.TempDir())
	if err != nil || ws != nil {
		t.Errorf("c -> d: warnings %+v, err %v; want nil, nil", ws, err)
	}
}

// TestParams_Warn_NilSafe: a converter run directly, without Catalog.Convert, may still call
// Warn; WithWarnings makes what it reports visible.
func TestParams_Warn_NilSafe(t *testing.T) {
	var p Params
	p.Warn(WarnAlphaDropped, "ignored")
	if got := p.Warnings(); got != nil {
		t.Errorf("Warnings() without a collector = %+v, want nil", got)
	}
	p = p.WithWarnings()
	p.Warn(WarnAlphaDropped, "flattened onto white")
	if got, want := p.Warnings(), []Warning{{WarnAlphaDropped, "flattened onto white"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Warnings() = %+v, want %+v", got, want)
	}
}

// TestWarningCodes_Unique: the list the API's enum is checked against has no repeats.
func TestWarningCodes_Unique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range WarningCodes {
		if c == "" || seen[c] {
			t.Errorf("warning code %q empty or repeated", c)
		}
		seen[c] = true
	}
}
