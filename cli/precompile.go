package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/convert/standard"
)

func newPrecompileCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "precompile",
		Short: "Compile the WebAssembly codecs into the compilation cache ahead of their first use",
		Long: "Compile PDFium, the AVIF codec and the JPEG XL decoder (WebAssembly) into the\n" +
			"compilation cache ($CONVSVC_WASM_CACHE_DIR, default <user cache dir>/convsvc/wazero),\n" +
			"so the first one-shot conversion, server worker or server loads them instead of\n" +
			"compiling them (seconds of CPU each). Run it at install, as the user that converts.\n" +
			"serve does the same in the background when it starts. Nothing is done when the\n" +
			"cache is off or already filled for this binary's codecs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := standard.WasmCacheDir()
			if dir == "" {
				return fmt.Errorf("no compilation cache: CONVSVC_WASM_CACHE_DIR is off or its directory cannot be created")
			}
			start := time.Now()
			if err := standard.FillWasmCache(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "WebAssembly codecs compiled in %s (%s)\n", dir, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}
