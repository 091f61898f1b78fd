package gemm

// The kernel families' ENTRY lists (kernels/cuda/z*_entries.cuh) are
// generated from the entry descriptions of internal/entries.
//go:generate go run ./internal/cmd/genentries -dir ../kernels/cuda
