// Package gguf reads, validates and writes GGUF files, the single-file
// model format of ggml and llama.cpp.
//
// A GGUF file holds typed metadata (key-value pairs such as
// "general.architecture" or a tokenizer's vocabulary) and a set of named
// tensors, each an n-dimensional array of one element type, most often a
// block-quantised one. The SDK uses it for PrismML's Ternary Bonsai models
// (tensor types PQ2_0 and PTQ1_0) and for the synthetic models it builds
// itself.
//
// # Reading
//
// Open memory-maps a file (on Linux and Darwin; elsewhere it reads it) and
// Parse reads an image already in memory. Both validate the whole header
// before returning: counts, lengths, shapes and sizes are checked against
// the bytes actually present, tensors must be aligned, inside the file and
// disjoint, and names must be unique, so a hostile file yields an error
// wrapping ErrFormat, never a panic or a huge allocation. Metadata are
// copied out of the file; File.TensorData returns zero-copy views of the
// tensors' bytes, valid until File.Close.
//
// Metadata are read with File.Lookup, which returns a Value, or with the
// typed accessors: File.Uint32, File.String and the like require the exact
// stored type, while File.Int, File.Float, File.Ints and File.Floats accept
// any numeric type, since writers disagree on which they use.
//
// # Writing
//
// NewWriter takes the metadata and tensor infos, computes each tensor's
// offset and writes the header; the tensors' data then follow one at a
// time with Writer.WriteTensor or, streamed in pieces, Writer.BeginTensor.
// A file of any size is written without being held in memory, and the
// layout (declaration order, every tensor padded to the alignment) is the
// one llama.cpp writes and requires.
//
// Only little-endian files of versions 2 and 3 are supported; version 1
// and big-endian files are refused with ErrVersion.
package gguf
