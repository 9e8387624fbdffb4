package client

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReopenAt_OwnDescriptorAtOffset: the upload's descriptor is a new one at the asked
// offset, closing it leaves the caller's file open, and the caller's offset never moves.
func TestReopenAt_OwnDescriptorAtOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	own, err := reopenAt(f, 4)
	if err != nil {
		t.Fatalf("reopenAt: %v", err)
	}
	if own.Fd() == f.Fd() {
		t.Fatal("reopenAt returned the caller's descriptor")
	}
	got, err := io.ReadAll(own)
	if err != nil || string(got) != "456789" {
		t.Fatalf("the new descriptor reads %q (%v), want 456789", got, err)
	}
	own.Close()
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 2 {
		t.Fatalf("the caller's offset is %d (%v), want 2", off, err)
	}
	if _, err := reopenAt(nil, 0); err == nil {
		t.Fatal("reopenAt(nil) succeeded")
	}
}
