package zstd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// inputs are contents of the kinds a session log holds, and the edge cases
// of the format: empty, one byte, runs (RLE blocks), incompressible bytes
// (raw blocks and raw literals), text with long repeats across blocks
// (offsets that reach back into earlier blocks, repeat offsets), and sizes
// around the 128 KiB block size.
func inputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var jsonl strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&jsonl, `{"type":"%s","seq":%d,"text":"step %d of the plan: read file src/%c/main.go and run go test ./... (%d)"}`+"\n",
			[]string{"assistant", "user", "tool_call", "tool_result"}[i%4], i, i*7, 'a'+rune(i%26), rng.IntN(1000))
	}
	words := strings.Fields("the quick brown fox jumps over a lazy dog while zstd encodes sequences of literals and matches")
	var prose strings.Builder
	for prose.Len() < 600_000 {
		prose.WriteString(words[rng.IntN(len(words))])
		prose.WriteByte(" \n"[rng.IntN(8)/7])
	}
	skewed := make([]byte, 300_000) // few symbols, skewed: Huffman with long codes
	for i := range skewed {
		v := rng.ExpFloat64() * 3
		skewed[i] = byte('a' + min(int(v), 40))
	}
	mixed := append(append(append([]byte{}, random(70_000)...), bytes.Repeat([]byte("abc"), 50_000)...), jsonl.String()[:100_000]...)
	return map[string][]byte{
		"empty":        {},
		"one byte":     {'x'},
		"run":          bytes.Repeat([]byte{'z'}, 300_000),
		"random":       random(200_000),
		"random small": random(100),
		"jsonl":        []byte(jsonl.String()),
		"prose":        []byte(prose.String()),
		"skewed":       skewed,
		"mixed":        mixed,
		"block size":   []byte(jsonl.String()[:128<<10]),
		"block size+1": []byte(jsonl.String()[:128<<10+1]),
		"short text":   []byte("hello, hello, hello world\n"),
	}
}

// encode compresses data as klauspost's encoder does at level, one frame.
func encode(t testing.TB, data []byte, level kzstd.EncoderLevel, opts ...kzstd.EOption) []byte {
	t.Helper()
	enc, err := kzstd.NewWriter(nil, append([]kzstd.EOption{kzstd.WithEncoderLevel(level), kzstd.WithEncoderConcurrency(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}

// TestDecodeMatchesReferenceEncoder decodes what another implementation
// encoded, at every level, with and without a checksum and a content size,
// and with small windows: the content comes back byte for byte.
func TestDecodeMatchesReferenceEncoder(t *testing.T) {
	levels := []kzstd.EncoderLevel{kzstd.SpeedFastest, kzstd.SpeedDefault, kzstd.SpeedBetterCompression, kzstd.SpeedBestCompression}
	variants := []struct {
		name string
		opts []kzstd.EOption
	}{
		{"plain", nil},
		{"no checksum", []kzstd.EOption{kzstd.WithEncoderCRC(false)}},
		{"no content size", []kzstd.EOption{kzstd.WithSingleSegment(false), kzstd.WithZeroFrames(true)}},
		{"window 64K", []kzstd.EOption{kzstd.WithWindowSize(64 << 10)}},
		{"no entropy", []kzstd.EOption{kzstd.WithNoEntropyCompression(true)}},
	}
	for name, data := range inputs() {
		for _, level := range levels {
			for _, v := range variants {
				frame := encode(t, data, level, v.opts...)
				got, err := Decode(nil, frame, 1<<30)
				if err != nil {
					t.Errorf("%s, %s, %s: %v", name, level, v.name, err)
					continue
				}
				if !bytes.Equal(got, data) {
					t.Errorf("%s, %s, %s: decoded %d bytes differ from the %d encoded", name, level, v.name, len(got), len(data))
				}
			}
		}
	}
}

// TestDecodeReferenceFixtures decodes frames written by the reference
// implementation (the zstd 1.5.4 command line, levels 1 to 22 with --long
// and --no-check), chosen so that between them they use every part of the
// format this package reads: raw, RLE and compressed blocks; raw, RLE,
// Huffman-coded (one and four streams, every size format) and repeated-
// table literals; Huffman weights written directly and FSE-compressed;
// predefined, RLE, FSE-coded and repeated sequence tables; every kind of
// repeat offset; two frames appended. Each must decode to content of the
// recorded length and SHA-256.
func TestDecodeReferenceFixtures(t *testing.T) {
	for _, c := range []struct {
		file   string
		size   int
		sha256 string
	}{
		{"k0.1.zst", 3002, "a69aaa5b86b1162c2d4c700028e59e2c137a80c323e39dd83c7dcfbb8d093d49"},
		{"k16.1.zst", 20000, "fd49e13238b19dca161ebbd8a7d8e96743866a2b436838d3a4c1ddbf4b78f856"},
		{"d1.1.zst", 1000, "17bdc8a907ba25ff9f5ce14e0b58c8f8cf1650ec4e55224f8a6dac6ae4be792a"},
		{"k1.19.zst", 20000, "45803aaaa85f0d30044eaf542e8dda45759b684ead6f98b97a47d30931c34f86"},
		{"r2.5.zst", 184339, "c98957866a848cb8ef4f6f5b9c19317edb4d0e0b103f2e826931cc9d4b5338a0"},
		{"jsonl.22.zst", 40582, "5c13c03875265bf80ee7190ab65c88c1d47a99ad0717c58b72df69e3965eda1e"},
		{"concat.zst", 40611, "0de35dfb723d6647d14f74d141b494cda3ac4823ef81c2be7557ef7cf99767d7"},
		{"runs.3.zst", 29025, "bc94318920be2b567fe9ffc779b8cc9d7c8131f90b088fae60cc0f0839d3d704"},
		{"twosym.19.zst", 20000, "497f24a0ff325ccebcf284ac4c065ec9ce1d13fa9c3089213f97219197140048"},
		{"k12.1.zst", 700, "e89b0b25031b9034495082a53e2766c16605d68b326273c4c1a0ac24b0597f5f"},
		{"k10.1.zst", 210, "4048bd932b2f684c8533987416ce7f14bd14e975e7b16aecd670799bd3ff3966"},
		{"skewed.nocheck.zst", 30000, "3adc77f2e9cc4c2044dde08db673144cc581646feabfa8bba6b47bf5d32c4976"},
	} {
		src, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(nil, src, 1<<30)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		sum := sha256.Sum256(got)
		if len(got) != c.size || hex.EncodeToString(sum[:]) != c.sha256 {
			t.Errorf("%s: decoded %d bytes with SHA-256 %x, want %d bytes with %s", c.file, len(got), sum, c.size, c.sha256)
		}
	}
}

// TestDecodeFramesAppended: frames appended one after another (as DSH
// flushes its log), with a skippable frame between them, decode to the
// concatenation, appended to what dst held.
func TestDecodeFramesAppended(t *testing.T) {
	in := inputs()
	var src, want []byte
	for _, name := range []string{"jsonl", "short text", "random small", "run"} {
		src = append(src, encode(t, in[name], kzstd.SpeedDefault)...)
		want = append(want, in[name]...)
		src = append(src, 0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c') // skippable, 3 bytes
	}
	got, err := Decode([]byte("prefix:"), src, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append([]byte("prefix:"), want...)) {
		t.Fatalf("decoded %d bytes, want %d", len(got), len(want)+7)
	}
}

// TestDecodeRefusesDamage: a frame cut short, a flipped byte or a wrong
// checksum is an error wrapping ErrCorrupt (never a panic, never silently
// different content); too large a content is ErrTooLarge; a dictionary is
// ErrDictionary.
func TestDecodeRefusesDamage(t *testing.T) {
	data := inputs()["jsonl"]
	frame := encode(t, data, kzstd.SpeedDefault)
	for _, n := range []int{0, 3, 5, 10, len(frame) / 2, len(frame) - 5, len(frame) - 1} {
		if _, err := Decode(nil, frame[:n], 1<<30); n > 0 && !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut to %d of %d bytes: %v, want ErrCorrupt", n, len(frame), err)
		}
	}
	bad := append([]byte{}, frame...)
	bad[len(bad)-2] ^= 0xFF // inside the checksum
	if _, err := Decode(nil, bad, 1<<30); !errors.Is(err, ErrCorrupt) {
		t.Errorf("wrong checksum: %v, want ErrCorrupt", err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bad := append([]byte{}, frame...)
		bad[4+rng.IntN(len(bad)-4)] ^= byte(1 + rng.IntN(255))
		got, err := Decode(nil, bad, 1<<30)
		if err == nil && !bytes.Equal(got, data) {
			t.Fatalf("a damaged frame decoded without an error to different content")
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrDictionary) {
			t.Fatalf("damaged frame: unexpected error %v", err)
		}
	}
	if _, err := Decode(nil, frame, int64(len(data)-1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit one byte short: %v, want ErrTooLarge", err)
	}
	noSize := encode(t, data, kzstd.SpeedDefault, kzstd.WithSingleSegment(false), kzstd.WithZeroFrames(true))
	if _, err := Decode(nil, noSize, 1000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("no content size, limit 1000: %v, want ErrTooLarge", err)
	}
	// Frame header 0x01: a 1-byte dictionary id (7), window byte 0x00;
	// then an empty last raw block.
	dict := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x01, 0x00, 0x07, 0x01, 0x00, 0x00}
	if _, err := Decode(nil, dict, 1<<30); !errors.Is(err, ErrDictionary) {
		t.Errorf("dictionary frame: %v, want ErrDictionary", err)
	}
	if _, err := Decode(nil, []byte("not zstd at all"), 1<<30); !errors.Is(err, ErrCorrupt) {
		t.Errorf("not zstd: %v, want ErrCorrupt", err)
	}
}

// TestXXHash64 checks the checksum against the reference values.
func TestXXHash64(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0xef46db3751d8e999},
		{"a", 0xd24ec4f1a98c6e5b},
		{"abc", 0x44bc2cf5ad770999},
		{"Nobody inspects the spammish repetition", 0xfbcea83c8a378bf1},
	} {
		if got := xxhash64([]byte(c.in)); got != c.want {
			t.Errorf("xxhash64(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

// FuzzDecode: any input either decodes or fails with one of the package's
// errors, without a panic; what the reference decoder accepts decodes to
// the same content.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"short text", "random small", "run"} {
		f.Add(encode(f, inputs()[name], kzstd.SpeedDefault))
	}
	ref, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1), kzstd.WithDecoderMaxMemory(1<<24))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := Decode(nil, src, 1<<24)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrDictionary) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		want, rerr := ref.DecodeAll(src, nil)
		if rerr == nil && !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes, the reference %d", len(got), len(want))
		}
	})
}

// BenchmarkDecode decodes 1 MB of JSONL (the kind of content a session log
// holds) compressed at the default level, against the reference decoder.
func BenchmarkDecode(b *testing.B) {
	var data []byte
	for len(data) < 1<<20 {
		data = append(data, inputs()["jsonl"]...)
	}
	frame := encode(b, data, kzstd.SpeedDefault)
	b.Run("bridge", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var out []byte
		for b.Loop() {
			var err error
			if out, err = Decode(out[:0], frame, 1<<30); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		dec, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		defer dec.Close()
		b.SetBytes(int64(len(data)))
		var out []byte
		for b.Loop() {
			if out, err = dec.DecodeAll(frame, out[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeDoesNotTrustTheDeclaredSize: a frame of a few bytes that
// declares almost a gigabyte of content fails without allocating it.
func TestDecodeDoesNotTrustTheDeclaredSize(t *testing.T) {
	frame := []byte{0x28, 0xB5, 0x2F, 0xFD, 0xA0} // 4-byte content size, single segment
	frame = append(frame, 0x00, 0x00, 0x00, 0x3F) // 0x3F000000 bytes declared
	frame = append(frame, 0x23, 0x00, 0x00, 'x')  // one RLE block of 4 bytes, last
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(nil, frame, 1<<30)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt (content shorter than declared)", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Fatalf("decoding 13 bytes allocated %d bytes", grown)
	}
}
