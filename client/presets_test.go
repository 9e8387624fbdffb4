package client_test

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestClient_Presets: an operator's client defines and lists presets and issues a
// presets-only key; that key's client converts through the preset (ConvertWith's Preset) and
// gets CodePresetsOnly without one.
func TestClient_Presets(t *testing.T) {
	e := testenv.Start(t)
	ctx := context.Background()
	admin := &client.Client{BaseURL: e.URL, Key: e.AdminToken, HTTP: e.HTTP}
	p, err := admin.SetPreset(ctx, "thumb", client.PresetRequest{TargetFormat: "jpeg", Options: &client.Options{Width: 12}})
	if err != nil || p.Name != "thumb" || p.Options.Width != 12 {
		t.Fatalf("SetPreset = %+v, %v", p, err)
	}
	if list, err := admin.Presets(ctx); err != nil || len(list) != 1 || list[0].TargetFormat != "jpeg" {
		t.Fatalf("Presets = %+v, %v", list, err)
	}
	key, err := admin.CreateKeyWith(ctx, e.AccountID, client.KeyOptions{PresetsOnly: true})
	if err != nil || !key.PresetsOnly || key.Key == "" {
		t.Fatalf("CreateKeyWith = %+v, %v", key, err)
	}
	front := &client.Client{BaseURL: e.URL, Key: key.Key, HTTP: e.HTTP}
	png := testenv.Sample(t, "images/sample.png")
	var out bytes.Buffer
	_, err = front.Convert(ctx, bytes.NewReader(png), int64(len(png)), "png", "jpeg", &out)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != client.CodePresetsOnly || apiErr.Status != 403 {
		t.Fatalf("Convert without a preset: %v", err)
	}
	job, err := front.ConvertWith(ctx, client.ConvertRequest{In: bytes.NewReader(png), Size: int64(len(png)), From: "png", To: "jpeg", Preset: "thumb"}, &out)
	if err != nil || job.TargetFormat != "jpeg" {
		t.Fatalf("ConvertWith a preset: %+v, %v", job, err)
	}
	img, err := jpeg.Decode(&out)
	if err != nil || img.Bounds().Dx() != 12 {
		t.Fatalf("output: %v, %v; want the preset's width 12", img.Bounds(), err)
	}
	if _, err := admin.DeletePreset(ctx, "thumb"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Preset(ctx, "thumb"); !errors.As(err, &apiErr) || apiErr.Code != client.CodeNotFound {
		t.Fatalf("Preset after DeletePreset: %v", err)
	}
}
