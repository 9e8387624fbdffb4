// Package convert holds the format registry, the conversion graph with its converters, and the
// worker pool that runs conversions for queued jobs.
//
// It knows nothing about storage or HTTP: the pool reaches jobs and files through the small
// Queue and Files interfaces declared here.
//
// # Graph
//
// Formats are nodes and converters edges. Catalog.Path picks the path with the fewest lossy
// steps, then the fewest steps; Targets and Sources follow chains. Raster images have a direct
// converter for every pair (decode once, encode once), so their paths are one step long.
// Recognised formats without converters (documents, data, audio, archives) are listed but
// reach nothing yet.
//
// # Images
//
// Inputs: png, jpeg, gif (first frame only), bmp, tiff, webp (decode only). Outputs: png,
// jpeg, gif, bmp, tiff. Every input is sniffed by its magic bytes first, then its header is
// read with DecodeConfig and its width*height checked against Limits.MaxPixels before any
// pixel is decoded; TIFF tiles out of proportion to the image are refused too, as x/image/tiff
// would inflate each one to its claimed size.
//
// Outputs: 8-bit sources stay 8-bit (16-bit PNG/TIFF sources stay 16-bit in PNG and TIFF);
// PNG at zlib BestSpeed; JPEG quality 85, alpha composited over white; GIF with the image's
// own colors when it has at most 256, else a median-cut palette from a 64K-pixel sample with
// Floyd-Steinberg dithering and alpha thresholded at half; BMP 8-bit for gray and opaque
// palettes, 24-bit, or 32-bit with a BITMAPV4HEADER alpha mask when there is alpha;
// TIFF deflate.
//
// # Pool
//
// Each task runs its conversion in its own goroutine, into a file in a per-task scratch
// directory, under a context that ends on timeout, Cancel or the end of the shutdown drain. The
// worker reports as soon as that context ends, so a converter that ignores it cannot hold the
// job; such a stray finishes in the background and cleans up its own scratch directory. Only
// a conversion that completed in time is copied to Files.WriteOutput.
package convert
