package toolcall_test

import (
	"encoding/json"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/toolcall"
)

func ExampleParse() {
	schemas := map[string]json.RawMessage{
		"get_weather": json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`),
	}
	text := "Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
	content, calls, malformed := toolcall.Parse(text, schemas)
	fmt.Printf("%q\n", content)
	for _, c := range calls {
		fmt.Println(c.Name, string(c.Arguments))
	}
	fmt.Println(len(malformed), "malformed")
	// Output:
	// "Let me look.\n"
	// get_weather {"city":"Paris","days":3}
	// 0 malformed
}
