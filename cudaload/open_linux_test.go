package cudaload_test

import (
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

func TestOpenLibraryThatIsNotADriverIsSymbolMissing(t *testing.T) {
	_, err := cudaload.Open(cudaload.WithLibraryPath("libm.so.6"))
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.ErrorIs(t, err, cudaload.ErrSymbolMissing)
	require.Contains(t, err.Error(), "libm.so.6 does not export cuInit")
}
