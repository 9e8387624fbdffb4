package convert

import (
	"errors"
	"testing"
)

import ()

func TestOptions_ValidateInput(t *testing.T) {
	if err := (Options{Page: 2, DPI: 300}).ValidateInput("pdf"); err != nil {
		t.Fatal(err)
	}
	if err := (Options{DPI: 300}).ValidateInput("svg"); err != nil {
		t.Fatal(err)
	}
	var oe *OptionError
	if err := (Options{Page: 2}).ValidateInput("png"); !errors.As(err, &oe) || oe.Option != OptPage {
		t.Fatalf("page for png input: %v", err)
	}
	if err := (Options{DPI: 300}).ValidateInput("jpeg"); !errors.As(err, &oe) || oe.Option != OptDPI {
		t.Fatalf("dpi for jpeg input: %v", err)
	}
}

// TestOptions_Sheet: sheet is an input option: any target takes it, only an xlsx input does,
// and a name longer than Excel allows is refused.
func TestOptions_Sheet(t *testing.T) {
	csv := Format{ID: "csv"}
	if err := (Options{Sheet: "Costs"}).Validate(csv); err != nil {
		t.Fatalf("sheet for a csv target: %v", err)
	}
	if err := (Options{Sheet: "2"}).ValidateInput("xlsx"); err != nil {
		t.Fatalf("sheet for an xlsx input: %v", err)
	}
	var oe *OptionError
	if err := (Options{Sheet: "Costs"}).ValidateInput("csv"); !errors.As(err, &oe) || oe.Option != OptSheet ||
		err.Error() != "options.sheet: only applies when the input is xlsx" {
		t.Fatalf("sheet for a csv input: %v", err)
	}
	if err := (Options{Sheet: "abcdefghijklmnopqrstuvwxyzabcdef"}).Validate(csv); !errors.As(err, &oe) || oe.Option != OptSheet {
		t.Fatalf("a 32-character sheet name: %v", err)
	}
	if err := (Options{Sheet: "Ärger über Kosten – 2026 Q1 mit"}).Validate(csv); err != nil {
		t.Fatalf("a 31-character sheet name: %v", err)
	}
}
