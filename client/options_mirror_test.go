package client_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
)

// TestOptions_MirrorTheServers: client.Options (the client imports nothing of ours, on purpose)
// carries every JSON field of the server's convert.Options under the same name and kind, and
// nothing more, so a new option cannot be forgotten in the client; likewise Crop.
func TestOptions_MirrorTheServers(t *testing.T) {
	for _, pair := range []struct{ client, server reflect.Type }{
		{reflect.TypeOf(client.Options{}), reflect.TypeOf(convert.Options{})},
		{reflect.TypeOf(client.Crop{}), reflect.TypeOf(convert.Crop{})},
	} {
		got, want := jsonFields(pair.client), jsonFields(pair.server)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("client.%s has JSON fields %v, the server's convert.%s has %v", pair.client.Name(), got, pair.server.Name(), want)
		}
	}
}

// jsonFields lists a struct's JSON names with their kinds ("name:kind"), sorted.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		kind := f.Type.Kind()
		if kind == reflect.Pointer {
			kind = f.Type.Elem().Kind()
		}
		if kind == reflect.Int64 {
			kind = reflect.Int
		}
		out = append(out, name+":"+kind.String())
	}
	slices.Sort(out)
	return out
}
