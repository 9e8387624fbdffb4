// Package convert holds the format registry, the conversion graph with its converters, and the
// worker pool that runs conversions for queued jobs.
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
// # Families
//
// Each family registers its formats and converters in its own file: images (image*.go:
// png, jpeg, gif, bmp, tiff, webp, avif, qoi, ppm, ico; jxl in), documents, PDF and SVG
// (document.go, doc_*.go, pdf_*.go, svg.go), data (data*.go), audio (audio*.go) and archives
// (archive*.go). Every input is sniffed by its magic bytes first, and every decoder checks
// sizes, frame and page counts and expansion against Limits before allocating. Conversions
// reserve an estimate of their memory from a budget shared by the catalog
// (Limits.MaxConversionMemory); the rest wait.
//
// 8-bit images stay 8-bit; PNG is written at zlib BestSpeed; JPEG at quality 85 (option
// quality), alpha composited over white; GIF with a median-cut palette and Floyd-Steinberg
// dithering.
//
// # Pool
//
// Each task runs its conversion in its own goroutine, straight into the job's output as
// Files.CreateOutput starts it, under a context that ends on timeout, Cancel or the end of the
// shutdown drain. The worker reports as soon as that context ends, so a converter that ignores
// it cannot hold the job; such a stray finishes in the background and discards its output and
// temporary files. Only a conversion that completed in time is committed.
package convert
