// Package convert is the conversion kernel: the format registry, the conversion graph, options,
// sniffing, the memory budget, and the worker pool that runs conversions for queued jobs.
//
// It knows nothing about storage or HTTP: the pool reaches jobs and files through the small
// Queue and Files interfaces declared here.
//
// # Graph
//
// Formats are nodes and converters edges. Catalog.Path picks the path with the fewest lossy
// steps, then the fewest steps; a chain crosses categories at most MaxCategoryChanges times and
// stops once it leaves the image category. Targets and Sources follow the same rules. Raster
// images have a direct converter for every pair (decode once, encode once). docs/formats.md,
// generated from the registry, lists every format, pair and option.
//
// # Kernel and families
//
// This package is the kernel: it registers nothing itself and imports no family. Each family
// is its own package with one Register function: convert/image, convert/document (which uses
// convert/image's exported codecs), convert/data, convert/audio and convert/archive.
// convert/standard assembles them into the catalog the service serves (standard.NewCatalog);
// a test or a program that wants fewer calls NewEmptyCatalog and the Register functions it
// needs. docs/architecture.md has the rules, which TestLayout_Imports enforces.
//
// Every input is sniffed by its magic bytes first (Sniff, whose table names the formats of
// every family, so that messages can say what a file looks like), and every decoder checks
// sizes, frame and page counts and expansion against Limits before allocating. Conversions
// reserve an estimate of their memory from a budget shared by the catalog
// (Limits.MaxConversionMemory, Catalog.AcquireMemory); the rest wait.
//
// # Pool
//
// Each task runs its conversion in its own goroutine, straight into the job's output as
// Files.CreateOutput starts it, under a context that ends on timeout, Cancel or the end of the
// shutdown drain. The worker reports as soon as that context ends, so a converter that ignores
// it cannot hold the job; such a stray finishes in the background and discards its output and
// temporary files. Only a conversion that completed in time is committed.
package convert
