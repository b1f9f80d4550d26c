package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sparkhost/sparkhost/modules/mmo/store"
)

// BenchmarkCreateAccount: one durable account creation (one transaction,
// WAL, synchronous=FULL: an fsync per commit).
func BenchmarkCreateAccount(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := store.Verifier{Salt: make([]byte, 16), Iterations: 4096, StoredKey: make([]byte, 32), ServerKey: make([]byte, 32)}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.CreateAccount(ctx, fmt.Sprintf("bench%d", i), v); err != nil {
			b.Fatal(err)
		}
	}
}
