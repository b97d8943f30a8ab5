package server_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServerImportsNoAdapter keeps the server on the domain services: no
// storage or transport adapter, whatever the binary composes.
func TestServerImportsNoAdapter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			seen++
			for _, banned := range []string{"github.com/heraldhq/herald/store", "github.com/heraldhq/herald/transport",
				"github.com/uptrace/bun", "github.com/linxGnu/gosmpp", "github.com/getkin/kin-openapi"} {
				require.False(t, p == banned || strings.HasPrefix(p, banned+"/"), "%s imports %s", name, p)
			}
		}
	}
	require.Greater(t, seen, 10, "the files of the package were read")
}
