package gputest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestContextIsSharedAndUsable(t *testing.T) {
	ctx := Context(t)
	require.Same(t, ctx, Context(t), "one context per process")
	require.Same(t, Driver(t), Driver(t))
	p, err := ctx.MemAlloc(256)
	require.NoError(t, err)
	require.NoError(t, ctx.MemFree(p))
}
