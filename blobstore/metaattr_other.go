//go:build !linux

package blobstore

import "os"

// Outside Linux every output's metadata goes to a sidecar file.
func setMetaAttr(*os.File, []byte) error   { return errNoMetaAttr }
func getMetaAttr(*os.File) ([]byte, error) { return nil, errNoMetaAttr }
