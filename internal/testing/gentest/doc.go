// Package gentest holds a test that generates Go clients from convsvc's OpenAPI
// document with third-party generators (ogen, oapi-codegen) and drives a live
// server with each. It has no code of its own; see generators_test.go.
package gentest
