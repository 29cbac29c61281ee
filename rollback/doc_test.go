package rollback_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestTuningDoc: docs/tuning.md has a row for every Config field and every
// netsim preset, so the page cannot silently fall behind the code.
func TestTuningDoc(t *testing.T) {
	b, err := os.ReadFile("../docs/tuning.md")
	require.NoError(t, err)
	doc := string(b)
	ct := reflect.TypeFor[rollback.Config]()
	for i := range ct.NumField() {
		name := ct.Field(i).Name
		if !ct.Field(i).IsExported() {
			continue // the test hooks (WithTestHooks)
		}
		if name == "Players" || name == "Local" || name == "Peers" || name == "Layout" || name == "State" || name == "Game" || name == "Transport" {
			continue // the match itself, not tuning
		}
		if f := ct.Field(i).Type; f.Kind() == reflect.Struct {
			for j := range f.NumField() { // a group: each of its fields
				name := name + "." + f.Field(j).Name
				assert.Contains(t, doc, "| `"+name+"` |", "Config.%s", name)
			}
			continue
		}
		assert.Contains(t, doc, "| `"+name+"` |", "Config.%s", name)
	}
	for _, p := range netsim.Presets {
		assert.True(t, strings.Contains(doc, "| `"+p.Name+"` |"), "preset %s", p.Name)
	}
}
