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
