package client

import (
	"reflect"
	"testing"
)

// TestOptions_IsZeroSeesEveryField: an option set alone makes Options non-zero, whichever it is
// (a hand-kept field list once forgot pages, and convert sent a page selection as no options).
func TestOptions_IsZeroSeesEveryField(t *testing.T) {
	if !(Options{}).IsZero() {
		t.Fatal("Options{} is not zero")
	}
	typ := reflect.TypeOf(Options{})
	for i := range typ.NumField() {
		var o Options
		f := reflect.ValueOf(&o).Elem().Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", typ.Field(i).Name, f.Kind())
		}
		if o.IsZero() {
			t.Errorf("Options with only %s set is zero", typ.Field(i).Name)
		}
	}
}
