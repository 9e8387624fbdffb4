package document

import "testing"

// raceShort reports the CI's race step (-race -short). There a document's page renders
// (PDFium, translated C) and its WebP and AVIF encodes run tens of times slower, while a
// layout or render in one goroutine gives the detector nothing to find: the tests below
// sample their cases in that step, and the plain step runs them all. What shares state
// across goroutines (TestPDF_Concurrent, TestSVGText_Concurrent, the font caches' first
// use) stays whole under the detector.
func raceShort() bool { return testing.Short() && raceEnabled }
