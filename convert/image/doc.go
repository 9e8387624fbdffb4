// Package image is the raster image family: png, jpeg, gif, bmp, tiff, webp, avif, qoi, ppm
// (Netpbm), ico and jxl (read only), plus heic and psd recognised without a converter.
// Register adds a direct converter for every readable format to every writable one (decode
// once, encode once).
//
// Modules: the standard library and golang.org/x/image (bmp, tiff, webp, resampling), the
// shared encoders in convert/internal (streaming PNG, JPEG, TIFF), HugoSmits86/nativewebp and
// gen2brain/webp (WebP), gen2brain/avif and gen2brain/jpegxl (WebAssembly run by wazero, no
// cgo), xfmoulet/qoi, sergeymakinen/go-ico and soniakeys/quant (GIF palettes).
//
// Limits: every decoder reads the header first and refuses an image over Limits.MaxPixels
// (frames*width*height for animations, at most MaxFrames frames) or a size its data cannot
// hold, before allocating; each conversion reserves its memory estimate from the catalog's
// budget (Catalog.AcquireMemory). 8-bit images stay 8-bit; JPEG at JPEGQuality, WebP at
// WebPQuality, AVIF at AVIFQuality unless the quality option says otherwise; PNG at zlib
// BestSpeed; GIF with a median-cut palette and Floyd-Steinberg dithering; alpha is composited
// over white (or the background option) for targets without it.
//
// Transforms (transform.go, finish.go): every format is its own target too; EXIF orientation,
// crop, rotate and flip make one turn of the output (d4), planned with the resize so that
// every path resamples the stored image and turns only the result; then an ICC profile is
// converted to sRGB or carried, alpha flattened, and the encode fits max_bytes.
//
// The document family uses the exported Codec table, DecodePixels, Resize and the limits
// helpers to embed images in PDFs and to encode rendered pages.
package image
