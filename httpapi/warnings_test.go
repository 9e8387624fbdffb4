package httpapi

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
)

// TestWarningCodes_Agree: the OpenAPI document's WarningCode enum, the kernel's list and the
// client's constants name the same codes in the same order.
func TestWarningCodes_Agree(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components.Schemas["WarningCode"].Enum; !slices.Equal(got, convert.WarningCodes) {
		t.Errorf("openapi.json WarningCode enum = %q, want convert.WarningCodes %q", got, convert.WarningCodes)
	}
	clientCodes := []client.WarningCode{
		client.WarnSheetsDropped, client.WarnGlyphsMissing, client.WarnTextNotRendered, client.WarnMetadataDropped,
		client.WarnColorProfileDropped, client.WarnAnimationDropped, client.WarnAlphaDropped, client.WarnBitDepthReduced,
		client.WarnChannelsMixed, client.WarnSampleRateChanged, client.WarnImagesDropped, client.WarnLinksDropped,
		client.WarnFormattingDropped, client.WarnEntriesDropped, client.WarnPermissionsDropped,
	}
	var got []string
	for _, c := range clientCodes {
		got = append(got, string(c))
	}
	if !slices.Equal(got, convert.WarningCodes) {
		t.Errorf("client warning codes = %q, want %q", got, convert.WarningCodes)
	}
}
