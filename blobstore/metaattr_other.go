//go:build !linux

package blobstore

import "os"

// Outside Linux every output's metadata goes to a sidecar file, and an upload's SHA-256 is
// read back from the file.
func setAttr(*os.File, string, []byte) error   { return errNoMetaAttr }
func getAttr(*os.File, string) ([]byte, error) { return nil, errNoMetaAttr }

func getPathAttr(string, string) ([]byte, error) { return nil, errNoMetaAttr }
