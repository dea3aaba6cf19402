// Package tokenizer turns text into the token ids a Bonsai model reads and token ids
// back into text. It is the byte-level BPE tokenizer of Qwen models, PrismML's Ternary
// Bonsai 2 (Qwen3.5) among them, read from the tokenizer keys of a GGUF file
// (tokenizer.ggml.*), and it tokenizes exactly as llama.cpp does.
//
// # Encoding
//
// Encode works in three steps, as llama.cpp's tokenizer:
//
//  1. Special tokens are cut out of the text: user-defined tokens (<think>,
//     <tool_call>) always, control tokens (<|im_start|>, <|endoftext|>) only when
//     parse-special is on. Longer tokens are matched first.
//  2. The pieces of text between them are split into words by the file's
//     pre-tokenizer (tokenizer.ggml.pre), a regex llama.cpp names: qwen35 (Qwen3.5),
//     qwen2 (Qwen2 to Qwen3), gpt-2 or default. The regexes are matched by hand, with
//     Unicode classes from the standard library's tables.
//  3. Each word, as bytes, is spelled in GPT-2's byte-level alphabet and merged by BPE,
//     lowest merge rank first. Words' tokens are cached.
//
// Text is not normalized (llama.cpp does not apply Hugging Face's NFC normalizer), and
// invalid UTF-8 is encoded as U+FFFD. Encode adds no BOS or EOS token; see AddBOS and
// AddEOS.
//
// # Decoding
//
// Decode and Piece return the bytes tokens stand for: control tokens render their text,
// as llama.cpp does when asked to render special tokens. A character may span tokens, so
// a token's bytes need not be valid UTF-8; a StreamDecoder, fed one token at a time,
// returns text only once its characters are complete.
//
// The package's parity test checks its ids against llama.cpp's llama-tokenize on a
// corpus of several hundred strings, for each pre-tokenizer and both parse-special
// settings, with Qwen3's 151k-token vocabulary.
package tokenizer
