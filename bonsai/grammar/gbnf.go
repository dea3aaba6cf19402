package grammar

// ParseGBNF compiles a grammar in llama.cpp's GBNF notation; the start rule is "root".
func ParseGBNF(src string) (*Grammar, error) {
	return nil, schemaErr("grammar", "", "GBNF is not implemented yet")
}
