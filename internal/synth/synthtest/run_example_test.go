package synthtest_test

import "testing"

// TestExample runs the example's test function.
func TestExample(t *testing.T) { testTwinMatchesPacked(t) }
