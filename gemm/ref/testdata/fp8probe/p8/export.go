package main

import (
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
)

// export appends records of set s (outputs d, plane of the wgmma) to w:
// u8 ta, u8 tb, u16 steps, u32 c bits, a codes, b codes, u32 d bits.
func export(w *gzip.Writer, s *set, d []float32, every int) int {
	K := 32 * s.ns
	n := 0
	for e := 0; e < s.nexp; e++ {
		for i := 0; i < 512; i += every {
			row, col := i/8, (i+e)%8
			var h [8]byte
			h[0], h[1] = byte(s.ta), byte(s.tb)
			binary.LittleEndian.PutUint16(h[2:], uint16(s.ns))
			binary.LittleEndian.PutUint32(h[4:], math.Float32bits(s.C[e*512+row*8+col]))
			w.Write(h[:])
			w.Write(s.A[e*64*K+row*K : e*64*K+(row+1)*K])
			w.Write(s.B[e*8*K+col*K : e*8*K+(col+1)*K])
			var t [4]byte
			binary.LittleEndian.PutUint32(t[:], math.Float32bits(d[e*512+row*8+col]))
			w.Write(t[:])
			n++
		}
	}
	return n
}

func exportAll(path string) {
	f, _ := os.Create(path)
	defer f.Close()
	w, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	defer w.Close()
	w.Write([]byte("DGF8PRB1"))
	os.Setenv("PLANE", "1")
	total := 0
	for _, p := range [][2]int{{0, 0}, {1, 1}, {0, 1}, {1, 0}} {
		ta, tb := p[0], p[1]
		name := string(rune('0'+ta)) + string(rune('0'+tb))
		s := gen(1, 1000, 1, ta, tb)
		total += export(w, s, readD("data/s"+name+".out", 1000*512), 256)
		s = gen(3, 300, 4, ta, tb)
		total += export(w, s, readD("data/m"+name+".out", 300*512), 512)
		s = gen(11, 400, 1, ta, tb)
		total += export(w, s, readD("data4/z"+name+".out", 400*512), 256)
	}
	println("records", total)
}
