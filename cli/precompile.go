package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/convert/standard"
)

func newPrecompileCommand() *cobra.Command {
	var lockFD int
	cmd := &cobra.Command{
		Use:   "precompile",
		Short: "Compile the WebAssembly codecs into the compilation cache ahead of their first use",
		Long: "Compile PDFium, the AVIF codec and the JPEG XL decoder (WebAssembly) into the\n" +
			"compilation cache ($CONVSVC_WASM_CACHE_DIR, default <user cache dir>/convsvc/wazero),\n" +
			"so the first one-shot conversion, server worker or server loads them instead of\n" +
			"compiling them (seconds of CPU each). Run it at install, as the user that converts.\n" +
			"serve does the same in the background when it starts, and a first one-shot\n" +
			"conversion of a PDF page starts it in the background. Nothing is done when the\n" +
			"cache is off or already filled for this binary's codecs; one fill runs at a time.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := standard.WasmCacheDir()
			if dir == "" {
				return fmt.Errorf("no compilation cache: CONVSVC_WASM_CACHE_DIR is off or its directory cannot be created")
			}
			if lockFD > 0 { // started by a one-shot conversion, which passed the fill lock
				lock := os.NewFile(uintptr(lockFD), "fill lock")
				defer lock.Close()
				return standard.FillWasmCacheLocked()
			}
			start := time.Now()
			if err := standard.FillWasmCache(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "WebAssembly codecs compiled in %s (%s)\n", dir, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().IntVar(&lockFD, "fill-lock-fd", 0, "the file descriptor holding the cache's fill lock (set by a one-shot conversion that starts this command)")
	_ = cmd.Flags().MarkHidden("fill-lock-fd")
	return cmd
}
