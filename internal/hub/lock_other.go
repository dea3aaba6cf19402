//go:build !unix

package hub

import "context"

// lock takes no lock where flock(2) is missing (Windows, among others): two processes
// pulling the same blob at once there may interleave their writes to the partial file;
// the sha256 check then refuses the result and deletes it, so a corrupt blob is never
// kept, only the time is lost.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	return func() {}, ctx.Err()
}
